// Token scopes, pure: which scopes a route accepts and whether a principal has
// one of them, shared by the server's guard (server/auth) and the panel, which
// hides what a token cannot do. `admin` can do everything; `operator` everything
// but token management; `manager` like operator, and it keeps access during
// maintenance (lifecycle/actions.ts PRIVILEGED_SCOPES); `read` every read;
// narrow scopes cover one resource.

import { ROUTER_SCOPE } from '../../protocol/registry-contract.js';

export const RESOURCES = ['hosts', 'layers', 'templates', 'groups', 'instances', 'commands'] as const;
export type Resource = (typeof RESOURCES)[number];

/** Every scope a token may carry. `router` is for the edge router; `metrics` for Prometheus. */
export const KNOWN_SCOPES: readonly string[] = [
  'admin',
  'manager',
  'operator',
  'read',
  'router',
  'metrics',
  'instances:request',
  ...RESOURCES.flatMap((r) => [`${r}:read`, `${r}:write`]),
  'files:read',
  'files:write',
];

/** A route's requirement: the scope it names (for 403 messages) and every scope that satisfies it. */
export interface ScopeRequirement {
  scope: string;
  anyOf: readonly string[];
  /** Also admits `<kind>:<group>` / `<kind>:*` tokens; the handler then checks the group (assertGroupScope). */
  groupScope?: GroupScopeKind;
}

/** Fleet permissions per group (docs/provisioning.md "API"): `spawn:<group>`, `allocate:<group>`, or `*` for every group. */
export type GroupScopeKind = 'spawn' | 'allocate';
export const FLEET_OPERATORS: readonly string[] = ['admin', 'manager', 'operator'];
const GROUP_SCOPE = /^(spawn|allocate):(\*|[A-Za-z0-9][A-Za-z0-9_.-]{0,127})$/;

export function groupScope(kind: GroupScopeKind): ScopeRequirement {
  return { scope: `${kind}:<group>`, anyOf: FLEET_OPERATORS, groupScope: kind };
}

/** The groups the principal may `kind` in: every group, or these. */
export function groupsInScope(principal: { scopes: readonly string[] } | undefined, kind: GroupScopeKind): 'all' | string[] {
  const scopes = principal?.scopes ?? [];
  if (scopes.some((s) => FLEET_OPERATORS.includes(s) || s === `${kind}:*`)) return 'all';
  const prefix = `${kind}:`;
  return scopes.filter((s) => s.startsWith(prefix)).map((s) => s.slice(prefix.length));
}

export function readScope(resource: Resource): ScopeRequirement {
  return { scope: `${resource}:read`, anyOf: ['admin', 'manager', 'operator', 'read', `${resource}:read`, `${resource}:write`] };
}

export function writeScope(resource: Resource): ScopeRequirement {
  return { scope: `${resource}:write`, anyOf: ['admin', 'manager', 'operator', `${resource}:write`] };
}

/**
 * Instance files (the files API and SFTP): a resource of its own that plain
 * `read` does not reach — server.properties holds the RCON password.
 */
export const FILES_READ: ScopeRequirement = { scope: 'files:read', anyOf: ['admin', 'manager', 'operator', 'files:read', 'files:write'] };
export const FILES_WRITE: ScopeRequirement = { scope: 'files:write', anyOf: ['admin', 'manager', 'operator', 'files:write'] };

export const ADMIN_SCOPE: ScopeRequirement = { scope: 'admin', anyOf: ['admin'] };
/** Maintenance switches and crash-loop resets: administrators and managers. */
export const MANAGER_SCOPE: ScopeRequirement = { scope: 'manager', anyOf: ['admin', 'manager'] };
export const METRICS_SCOPE: ScopeRequirement = { scope: 'metrics', anyOf: ['admin', 'operator', 'read', 'metrics'] };
/** The edge router's endpoints (registry, transfer claims, session reports): its own narrow token. */
export const ROUTER_ACCESS: ScopeRequirement = { scope: ROUTER_SCOPE, anyOf: ['admin', ROUTER_SCOPE] };
/** Wake requests (resume/start): instance writers, and the router on a player's login. */
export const WAKE_ACCESS: ScopeRequirement = {
  scope: 'instances:write',
  anyOf: ['admin', 'manager', 'operator', 'instances:write', ROUTER_SCOPE],
};

/** What POST /instances/:id/<action> accepts: the wake actions also admit the router; the rest are instance writes. */
export function powerActionScope(action: string): ScopeRequirement {
  return action === 'start' || action === 'resume' ? WAKE_ACCESS : writeScope('instances');
}

/** Installation requests (docs/lifecycle.md "Installation requests"): users ask, administrators decide; `instances:request` cannot create directly. */
export const REQUEST_ACCESS: ScopeRequirement = {
  scope: 'instances:request',
  anyOf: ['admin', 'manager', 'operator', 'instances:request'],
};

export function hasScope(scopes: readonly string[], requirement: ScopeRequirement): boolean {
  const kind = requirement.groupScope;
  return scopes.some((s) => requirement.anyOf.includes(s) || (kind !== undefined && s.startsWith(`${kind}:`)));
}

export function unknownScopes(scopes: readonly string[]): string[] {
  return scopes.filter((s) => !KNOWN_SCOPES.includes(s) && !GROUP_SCOPE.test(s));
}
