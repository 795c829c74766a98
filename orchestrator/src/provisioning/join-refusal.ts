// What a player is told when a router join to a group can neither find a
// world nor spawn one: the limit that refused the spawn, in a player's words
// ("survival is full (4 of 4 worlds)."). Pure: the orchestrator's join sends
// it as the refusal's `details.playerMessage`, the router shows it.

export interface SpawnRefusal {
  /** CAP_REACHED (a cap in `details`) or NO_CAPACITY (no host has room). */
  code: string;
  details?: Readonly<Record<string, unknown>> | undefined;
}

const worlds = (n: number): string => `${n} world${n === 1 ? '' : 's'}`;
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The player-facing reason a join to `groupId` could not spawn, naming the limit (one sentence, ends with a dot). */
export function joinRefusalMessage(groupId: string, refusal: SpawnRefusal): string {
  const d = refusal.details ?? {};
  const limit = num(d.limit);
  const current = num(d.current);
  if (refusal.code === 'CAP_REACHED' && limit !== undefined) {
    const of = `${current ?? limit} of ${worlds(limit)}`;
    if (d.cap === 'maxTotalInstances') return `The network is full (${of}).`;
    if (d.cap === 'template.maxInstances')
      return `${groupId} is full (its template${typeof d.template === 'string' ? ` ${d.template}` : ''} runs ${of} across all groups).`;
    // The group's own caps (caps.maxInstances, scaling.maxInstances): the common case.
    return `${groupId} is full (${of}).`;
  }
  if (refusal.code === 'CAP_REACHED') return `${groupId} is full.`;
  if (refusal.code === 'NO_CAPACITY') return `No host has room for another ${groupId} world.`;
  return `${groupId} cannot take another world right now.`;
}
