// The response schemas of the public routes, from the contract's route table
// (contracts/public-api/routes.ts): the success answers, a media type for
// answers that are not JSON (logs, archives, event streams), and the one error
// body for every 4xx and 5xx.

import type { TSchema } from '@sinclair/typebox';
import { ErrorBody } from '../contracts/public-api/common.js';
import { PUBLIC_ROUTES, type RouteContract } from '../contracts/public-api/routes.js';

const API_PREFIX = '/api/v1';

/** `GET /instances/:id` for a route Fastify registered as GET /api/v1/instances/:id (HEAD reads GET's entry); undefined outside the API. */
export function routeKeyOf(method: string | readonly string[], url: string): string | undefined {
  if (!url.startsWith(`${API_PREFIX}/`)) return undefined;
  const verb = Array.isArray(method) ? String(method[0]) : String(method);
  return `${verb === 'HEAD' ? 'GET' : verb} ${url.slice(API_PREFIX.length)}`;
}

/** The contract entry of a route, if it has one. */
export function contractOf(method: string | readonly string[], url: string): RouteContract | undefined {
  const key = routeKeyOf(method, url);
  return key !== undefined && Object.hasOwn(PUBLIC_ROUTES, key) ? (PUBLIC_ROUTES as Record<string, RouteContract>)[key] : undefined;
}

/** Fastify's `schema.response` of a route: its success answers and ErrorBody for 4xx/5xx; undefined when the contract has no entry. */
export function responseSchemaOf(method: string | readonly string[], url: string): Record<string, unknown> | undefined {
  const entry = contractOf(method, url);
  if (!entry) return undefined;
  const response: Record<string, unknown> = {};
  for (const [status, schema] of Object.entries(entry.ok) as [string, TSchema][]) {
    response[status] = entry.media ? { description: schema.description ?? 'the answer', content: { [entry.media]: { schema } } } : schema;
  }
  response['4xx'] = ErrorBody;
  response['5xx'] = ErrorBody;
  return response;
}
