// ectl reads the orchestrator's answers through the public contract
// (contracts/public-api/routes.ts): every JSON answer of a route the contract
// describes is checked against that route's response schema for its status
// before a command uses it, so ectl and the server share one contract at run
// time, not only in types. A mismatch is an error naming the call and the
// first fields that differ. Loaded lazily (api-client.ts) so that commands
// which never call the server start without the schemas.

import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { PUBLIC_ROUTES, type RouteContract } from '../contracts/public-api/routes.js';
import { CliError } from './errors.js';

interface RouteMatcher {
  key: string;
  method: string;
  segments: (string | null)[];
  literals: number;
  contract: RouteContract;
}

let matchers: RouteMatcher[] | undefined;

function routeMatchers(): RouteMatcher[] {
  matchers ??= Object.entries(PUBLIC_ROUTES as Record<string, RouteContract>).map(([key, contract]) => {
    const [method, path] = key.split(' ') as [string, string];
    const segments = path
      .split('/')
      .slice(1)
      .map((s) => (s.startsWith(':') ? null : s));
    return { key, method, segments, literals: segments.filter((s) => s !== null).length, contract };
  });
  return matchers;
}

/** The contract route of `METHOD path` (path below /api/v1, query left off); a literal segment beats a parameter. */
export function contractRouteOf(method: string, path: string): { key: string; contract: RouteContract } | undefined {
  const parts = path.split('?')[0]!.split('/').slice(1);
  let best: RouteMatcher | undefined;
  for (const m of routeMatchers()) {
    if (m.method !== method || m.segments.length !== parts.length) continue;
    if (!m.segments.every((s, i) => s === null || s === parts[i])) continue;
    if (!best || m.literals > best.literals) best = m;
  }
  return best && { key: best.key, contract: best.contract };
}

const MAX_LISTED = 3;

/**
 * Throws a runtime CliError when a JSON answer of a contract route does not
 * match the route's schema for `status`; answers of routes (or statuses, or
 * media types) the contract does not describe as JSON pass unchecked.
 */
export function checkAnswer(method: string, path: string, status: number, answer: unknown): void {
  const route = contractRouteOf(method, path);
  if (!route || route.contract.media !== undefined) return;
  const schema: TSchema | undefined = route.contract.ok[status];
  if (!schema || Value.Check(schema, answer)) return;
  const errors = [...Value.Errors(schema, answer)];
  const listed = errors
    .slice(0, MAX_LISTED)
    .map((e) => `${e.path || '/'}: ${e.message}`)
    .join('; ');
  const more = errors.length > MAX_LISTED ? ` (and ${errors.length - MAX_LISTED} more)` : '';
  throw new CliError(
    'runtime',
    `${method} ${path.split('?')[0]}: the orchestrator's answer (HTTP ${status}) does not match the public contract (${route.key}): ${listed}${more}; ectl and the orchestrator may be different versions`,
  );
}
