// The API client: same-origin fetches that carry the session cookie and the
// CSRF header every mutation needs. Routes, bodies and answers are the public
// contract's (orchestrator/src/contracts/public-api): `call` and `path` take a
// route of its table, so every answer has its type and no view declares one.

import {
  callRoute,
  pathWithQuery,
  routePath,
  type Answer,
  type BodyOf,
  type CallOptions,
  type ParamsOf,
  type Query,
  type Transport,
} from '../../orchestrator/src/contracts/public-api/client.js';
import { CSRF_HEADER, CSRF_VALUE } from '../../orchestrator/src/contracts/public-api/panel-rules.js';
import type { RouteKey } from '../../orchestrator/src/contracts/public-api/routes.js';
import {
  groupsInScope,
  hasScope,
  MANAGER_SCOPE,
  ADMIN_SCOPE,
  FILES_WRITE,
  writeScope,
  type Resource,
} from '../../orchestrator/src/contracts/public-api/scopes.js';
import type { SessionAnswer, SignedIn } from '../../orchestrator/src/contracts/public-api/answers.js';

export type { Answer, BodyOf, RouteKey, SessionAnswer };
export type { BackupEntry, FleetInstanceView } from '../../orchestrator/src/contracts/public-api/answers.js';
export type { GroupView, HistoryEntryView, HostView, InstanceView } from '../../orchestrator/src/contracts/public-api/views.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const CSRF = { [CSRF_HEADER]: CSRF_VALUE };

interface ErrorAnswer {
  error?: { code?: string; message?: string };
}

/** One request below /api/v1: JSON in and out; an error answer becomes an ApiError with its code. */
async function send(method: string, path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`/api/v1${path}`, {
    method,
    credentials: 'same-origin',
    headers: { ...CSRF, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (res.status === 204) return null;
  const text = await res.text();
  const data: unknown = text && (res.headers.get('content-type') ?? '').includes('json') ? JSON.parse(text) : text;
  if (!res.ok) {
    const err = typeof data === 'object' && data !== null ? (data as ErrorAnswer).error : undefined;
    throw new ApiError(
      res.status,
      err?.code ?? `HTTP_${res.status}`,
      err?.message ?? (typeof data === 'string' && data ? data : res.statusText),
    );
  }
  return data;
}

const transport: Transport = {
  request: (method, path, opts) => send(method, pathWithQuery(path, opts.query), opts.body),
};

/**
 * A request by method and path, for the calls whose answer the caller does not
 * read (fire-and-forget actions), and the server page's routes typed in
 * types.ts (files, stats) until they join `call`; `call` is the typed way.
 */
export function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  return send(method, path, body) as Promise<T>;
}

/** Calls a route of the contract: `call('POST /instances/:id/stop', { id }, { body: {} })`. */
export function call<K extends RouteKey>(route: K, params: ParamsOf<K>, opts?: CallOptions<K>): Promise<Answer<K>> {
  return callRoute(transport, route, params, opts);
}

/** The path (below /api/v1) of a GET route with its parameters and query, for useResource. */
export function path<K extends RouteKey>(route: K, params: ParamsOf<K>, query?: Query): string {
  return pathWithQuery(routePath(route, params).path, query);
}

export const enc = encodeURIComponent;

/** The signed-in principal. */
export type Me = Pick<SignedIn, 'name' | 'kind' | 'scopes'>;

/** An agent call the orchestrator relays names the agent: "agent http://10.0.0.5:8081 refused GET /v1/…: <its reason>". */
const AGENT_PREFIX = /\bagent\s+https?:\/\/\S+\s+refused\s+[A-Z]+\s+\S+:\s*/g;
const URL_TEXT = /\bhttps?:\/\/[^\s,;)]+/g;

/** A server-written text (a state reason, an error) without agent addresses: "agent … refused GET …: why" keeps "why". */
export function forPeople(text: string): string {
  return text.replace(AGENT_PREFIX, '').replace(URL_TEXT, 'the host').trim();
}

/**
 * An error in words for people: never an agent URL or internal text. 403 says
 * "Not allowed"; a server fault says so without its text (the orchestrator's
 * log and the audit log keep it); an agent's refusal keeps only its reason.
 */
export function peopleMessage(error: unknown): string {
  if (!(error instanceof ApiError)) {
    return error instanceof TypeError ? 'The orchestrator cannot be reached; check the connection.' : 'Something went wrong in the panel.';
  }
  const text = forPeople(error.message);
  if (error.status === 403) {
    const scope = /lacks scope (\S+)/.exec(text)?.[1];
    return scope ? `Not allowed: this token lacks the ${scope} scope.` : `Not allowed: ${text}`;
  }
  if (error.code === 'HOST_UNAVAILABLE') return "The server's host cannot be reached right now; try again when it is back.";
  if (error.code === 'TIMEOUT' || /\bagent at\b/.test(text)) return "The server's host did not answer in time; try again.";
  if (error.code === 'INTERNAL' || error.status === 500)
    return "Something went wrong on the server; the orchestrator's log has the details.";
  return text || `The request failed (${error.status}).`;
}

/**
 * What the signed-in token may do, by the API's own scope rules (contracts/public-api/scopes.ts);
 * the API checks again (the panel only hides what would be refused).
 */
export function can(me: Me | null, what: Resource | 'admin' | 'manager' | 'files'): boolean {
  if (!me) return false;
  if (what === 'admin') return hasScope(me.scopes, ADMIN_SCOPE);
  if (what === 'manager') return hasScope(me.scopes, MANAGER_SCOPE);
  if (what === 'files') return hasScope(me.scopes, FILES_WRITE);
  return hasScope(me.scopes, writeScope(what));
}

/** Whether the token may spawn and despawn in `groupId` (spawn:<group>, spawn:* or an operator's), as the API checks. */
export function canSpawn(me: Me, groupId: string): boolean {
  const groups = groupsInScope(me, 'spawn');
  return groups === 'all' || groups.includes(groupId);
}

export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '–';
  const s = Math.round((now - Date.parse(iso)) / 1000);
  if (s < 0) return `in ${duration(-s)}`;
  return `${duration(s)} ago`;
}

export function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} d`;
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return `${v.toFixed(u === 0 ? 0 : 1)} ${units[u]}`;
}
