// Token scopes, pure: which scopes a route accepts and whether a principal has
// one of them. `admin` can do everything; `operator` everything but token
// management; `read` every read; narrow scopes cover one resource.

export const RESOURCES = ['hosts', 'layers', 'templates', 'groups', 'instances', 'commands'] as const;
export type Resource = (typeof RESOURCES)[number];

/** Every scope a token may carry. `router` is for the edge router; `metrics` for Prometheus. */
export const KNOWN_SCOPES: readonly string[] = [
  'admin', 'operator', 'read', 'router', 'metrics',
  ...RESOURCES.flatMap((r) => [`${r}:read`, `${r}:write`]),
];

/** A route's requirement: the scope it names (for 403 messages) and every scope that satisfies it. */
export interface ScopeRequirement {
  scope: string;
  anyOf: readonly string[];
}

export function readScope(resource: Resource): ScopeRequirement {
  return { scope: `${resource}:read`, anyOf: ['admin', 'operator', 'read', `${resource}:read`, `${resource}:write`] };
}

export function writeScope(resource: Resource): ScopeRequirement {
  return { scope: `${resource}:write`, anyOf: ['admin', 'operator', `${resource}:write`] };
}

export const ADMIN_SCOPE: ScopeRequirement = { scope: 'admin', anyOf: ['admin'] };
export const METRICS_SCOPE: ScopeRequirement = { scope: 'metrics', anyOf: ['admin', 'operator', 'read', 'metrics'] };

export function hasScope(scopes: readonly string[], requirement: ScopeRequirement): boolean {
  return scopes.some((s) => requirement.anyOf.includes(s));
}

export function unknownScopes(scopes: readonly string[]): string[] {
  return scopes.filter((s) => !KNOWN_SCOPES.includes(s));
}
