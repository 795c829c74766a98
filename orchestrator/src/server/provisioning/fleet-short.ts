// Why a fleet stays below its minimum or buffer (a limit without room, a
// spawn refused for host capacity): kept where the fleet view reads it, and
// said once per change of reason in one log line and one audit entry, never
// every provisioner tick.

import type { JsonObject } from '../../domain/index.js';
import type { FleetPlan } from '../../provisioning/index.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';

export interface FleetShort {
  reason: string;
  /** What the reason changes with (the binding limits, a refusal's code). */
  key: string;
  /** When this reason began (epoch ms). */
  since: number;
}

const shortKey = (groupId: string): string => `fleet-short:${groupId}`;

/** The reason as last reported for the group, or null (the fleet reaches what it wants). */
export async function readFleetShort(store: Store, groupId: string): Promise<FleetShort | null> {
  const v = (await store.system.get(shortKey(groupId))) as Partial<FleetShort> | null | undefined;
  return v && typeof v.reason === 'string' && typeof v.key === 'string' && typeof v.since === 'number'
    ? { reason: v.reason, key: v.key, since: v.since }
    : null;
}

/** The plan's shortfall and a refused spawn as one reason (null: nothing keeps the fleet short). */
export function shortOf(
  plan: Pick<FleetPlan, 'short' | 'spawn'>,
  refused: { code: string; message: string } | undefined,
): { reason: string; key: string } | null {
  const parts: { reason: string; key: string }[] = [];
  if (plan.short) parts.push({ reason: plan.short.reason, key: `limits:${plan.short.limits.join(',')}` });
  // A CAP_REACHED refusal is a race another path won: the next plan names the limit itself.
  if (refused && refused.code !== 'CAP_REACHED')
    parts.push({ reason: `${plan.spawn.reason}: the spawn was refused: ${refused.message}`, key: `refused:${refused.code}` });
  if (parts.length === 0) return null;
  return { reason: parts.map((p) => p.reason).join('; '), key: parts.map((p) => p.key).join('|') };
}

export class FleetShortReporter {
  /** The key last reported per group (read from the store once, so a restart does not repeat it). */
  private readonly last = new Map<string, string | null>();
  /** The words last stored per group (they change with the counts; the key does not). */
  private readonly reasons = new Map<string, string>();
  /** Reports one after another: two evaluations of a group never both say the same change. */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: { store: Store; logger: Logger; audit: (groupId: string, params: JsonObject, now: number) => Promise<void> },
  ) {}

  report(groupId: string, short: { reason: string; key: string } | null, now: number): Promise<void> {
    const run = this.queue.then(() => this.apply(groupId, short, now));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async apply(groupId: string, short: { reason: string; key: string } | null, now: number): Promise<void> {
    if (!this.last.has(groupId)) this.last.set(groupId, (await readFleetShort(this.deps.store, groupId))?.key ?? null);
    const before = this.last.get(groupId) ?? null;
    if ((short?.key ?? null) === before) {
      // The same reason with newer counts: the view reads the latest words; nothing is said again.
      if (short && short.reason !== this.reasons.get(groupId)) {
        const kept = await readFleetShort(this.deps.store, groupId);
        await this.deps.store.system.put(shortKey(groupId), { ...short, since: kept?.since ?? now }, now);
        this.reasons.set(groupId, short.reason);
      }
      return;
    }
    this.last.set(groupId, short?.key ?? null);
    if (short) this.reasons.set(groupId, short.reason);
    else this.reasons.delete(groupId);
    await this.deps.store.system.put(shortKey(groupId), short ? { ...short, since: now } : null, now);
    if (short)
      this.deps.logger.warn({ groupId, reason: short.reason }, `fleet ${groupId} cannot reach its minimum or buffer: ${short.reason}`);
    else this.deps.logger.info({ groupId }, `fleet ${groupId} reaches its minimum and buffer again`);
    await this.deps.audit(groupId, short ? { short: short.reason } : { short: null }, now);
  }
}
