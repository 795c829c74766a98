// Token scopes: the rules are the public contract's (contracts/public-api/scopes.ts,
// shared with the panel); the server adds the refusal of a group it cannot reach.

import { AppError } from '../../shared/errors.js';
import { FLEET_OPERATORS, groupsInScope, type GroupScopeKind } from '../../contracts/public-api/scopes.js';

export * from '../../contracts/public-api/scopes.js';

/** FORBIDDEN unless the principal may `kind` in `groupId`. */
export function assertGroupScope(
  principal: { name: string; scopes: readonly string[] } | undefined,
  kind: GroupScopeKind,
  groupId: string,
): void {
  const allowed = groupsInScope(principal, kind);
  if (allowed === 'all' || allowed.includes(groupId)) return;
  throw new AppError(
    'FORBIDDEN',
    `token ${principal?.name ?? 'anonymous'} may not ${kind} in group ${groupId} (needs ${kind}:${groupId}, ${kind}:* or ${FLEET_OPERATORS.join('/')})`,
    {
      details: { requiredScope: `${kind}:${groupId}` },
    },
  );
}
