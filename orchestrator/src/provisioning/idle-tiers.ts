// Which idle tiers an instance sleeps by, pure: its own override, else its
// group's, else the system's (docs/provisioning.md "What sleeps when"). Sleep is
// on by default: a world nobody configured follows SYSTEM_DEFAULT_IDLE_TIERS;
// an empty list at any level turns sleep off from there down.

import { invalid } from './fields.js';
import { IDLE_ACTIONS, parseIdleTiers, type IdleTier } from './scaling-policy.js';

/**
 * The built-in system default, `10m:pause,6h:stop`. Ten minutes empty is longer
 * than a relog, a dimension change or a short break, and a paused world wakes in
 * milliseconds, so a returning player does not notice. Six hours frees the memory
 * of a world nobody played for an evening; its cold start (30–60 s for a
 * generated world) is paid at most once a day by the first player back.
 */
export const SYSTEM_DEFAULT_IDLE_TIERS_TEXT = '10m:pause,6h:stop';

export type IdleTierSource = 'instance' | 'group' | 'system';

export interface IdleTierChoice {
  tiers: readonly IdleTier[];
  source: IdleTierSource;
}

/** The tiers in force: the instance's override, else the group's, else the system's. */
export function effectiveIdleTiers(
  instance: readonly IdleTier[] | undefined,
  group: readonly IdleTier[] | undefined,
  system: readonly IdleTier[],
): IdleTierChoice {
  if (instance !== undefined) return { tiers: instance, source: 'instance' };
  if (group !== undefined) return { tiers: group, source: 'group' };
  return { tiers: system, source: 'system' };
}

/**
 * `10m:pause,6h:stop` (the CLI's and the environment's form) → idle tiers; `off`
 * or an empty text is no tiers. Refuses with the tier and what is wrong.
 */
export function parseIdleTierText(text: string, path = 'idleTiers'): IdleTier[] {
  const trimmed = text.trim();
  if (trimmed === '' || trimmed === 'off' || trimmed === 'none') return [];
  const raw = trimmed.split(',').map((part, i) => {
    const [after, action, extra] = part.trim().split(':');
    if (!after || !action || extra !== undefined)
      throw invalid(`${path}[${i}]`, `"${part.trim()}" must be AFTER:ACTION, e.g. 10m:pause (actions: ${IDLE_ACTIONS.join(', ')})`);
    return { after, action };
  });
  return parseIdleTiers(raw, path);
}

/** The text form of tiers (`10m:pause,6h:stop`, or `off`). */
export function idleTierText(tiers: readonly IdleTier[]): string {
  return tiers.length === 0 ? 'off' : tiers.map((t) => `${t.after}:${t.action}`).join(',');
}
