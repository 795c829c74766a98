// The typed client of the public API, shared by ectl (cli/api-client.ts) and
// the panel (web/src/api.ts): each side brings its transport (bearer token and
// node:http, or the session cookie and the CSRF header); the route table
// (routes.ts) gives every call its path parameters, body and answer type.
// Types only from the schemas, so the panel bundles no TypeBox.

import type { Static, TSchema } from '@sinclair/typebox';
import type { PublicRoutes, RouteKey } from './routes.js';

type Entry<K extends RouteKey> = PublicRoutes[K];
type OkSchemas<K extends RouteKey> = Entry<K>['ok'][keyof Entry<K>['ok']];

/** What a route answers on success (the union over its success codes; a 204 is `null`). */
export type Answer<K extends RouteKey> = OkSchemas<K> extends infer S ? (S extends TSchema ? Static<S> : never) : never;
/** The body a route takes, where the contract defines it; else any JSON value the route documents. */
export type BodyOf<K extends RouteKey> = Entry<K> extends { body: infer S extends TSchema } ? Static<S> : unknown;

type ParamNames<S extends string> = S extends `${string}:${infer P}/${infer Rest}`
  ? P | ParamNames<`/${Rest}`>
  : S extends `${string}:${infer P}`
    ? P
    : never;
/** `{id: string}` for `GET /instances/:id`. */
export type ParamsOf<K extends RouteKey> = { [P in ParamNames<K>]: string };

export type Query = Record<string, string | number | boolean | undefined>;

export interface CallOptions<K extends RouteKey> {
  body?: BodyOf<K>;
  query?: Query;
}

/** How one side talks HTTP: `path` is below /api/v1 and already has its parameters. */
export interface Transport {
  request(method: string, path: string, opts: { body?: unknown; query?: Query }): Promise<unknown>;
}

/** The method and the path of a route with its parameters filled in (each encoded). */
export function routePath<K extends RouteKey>(route: K, params: ParamsOf<K>): { method: string; path: string } {
  const space = route.indexOf(' ');
  const values = params as Record<string, string>;
  const path = route.slice(space + 1).replace(/:([A-Za-z]+)/g, (_m, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`${route}: no value for :${name}`);
    return encodeURIComponent(value);
  });
  return { method: route.slice(0, space), path };
}

/**
 * A path with a query string (`undefined` values left out), for the callers that fetch by path (the panel's live resources).
 * @public (web/src/api.ts, outside knip's project)
 */
export function pathWithQuery(path: string, query: Query = {}): string {
  const search = Object.entries(query)
    .filter((e): e is [string, string | number | boolean] => e[1] !== undefined)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`)
    .join('&');
  return search ? `${path}?${search}` : path;
}

/** Calls `route` with its parameters (none for a route without), body and query; answers its contract type. */
export function callRoute<K extends RouteKey>(
  transport: Transport,
  route: K,
  params: ParamsOf<K>,
  opts: CallOptions<K> = {},
): Promise<Answer<K>> {
  const { method, path } = routePath(route, params);
  return transport.request(method, path, {
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    ...(opts.query ? { query: opts.query } : {}),
  }) as Promise<Answer<K>>;
}
