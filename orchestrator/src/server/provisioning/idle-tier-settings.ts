// Where idle tiers are set: the system's default (the operator's stored choice
// wins over ENDERCLOUD_IDLE_TIERS, built in 10m:pause,6h:stop), a group's, and
// one instance's override. The provisioner and the fleet view read the result
// through effectiveIdleTiers (provisioning/idle-tiers.ts).

import type { Group, Instance } from '../../domain/index.js';
import type { IdleTier } from '../../provisioning/index.js';
import { AppError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';

const KEY = 'idle-tiers';

export interface SystemIdleTiersView {
  tiers: IdleTier[];
  /** `configured`: ENDERCLOUD_IDLE_TIERS or the built-in default; `stored`: set through the API. */
  source: 'configured' | 'stored';
}

export class IdleTierSettings {
  constructor(
    private readonly store: Store,
    private readonly configured: readonly IdleTier[],
  ) {}

  async system(): Promise<SystemIdleTiersView> {
    const stored = (await this.store.system.get(KEY)) as { tiers?: IdleTier[] } | undefined;
    return stored?.tiers ? { tiers: stored.tiers, source: 'stored' } : { tiers: [...this.configured], source: 'configured' };
  }

  async tiers(): Promise<IdleTier[]> {
    return (await this.system()).tiers;
  }

  /** null: back to the configured default. */
  async setSystem(tiers: IdleTier[] | null, now: number): Promise<SystemIdleTiersView> {
    if (tiers === null) await this.store.system.delete(KEY);
    else await this.store.system.put(KEY, { tiers: tiers.map((t) => ({ ...t })) }, now);
    return this.system();
  }

  /** null: the group follows the system's tiers again. */
  async setGroup(groupId: string, tiers: IdleTier[] | null, now: number): Promise<Group> {
    const group = await this.store.groups.get(groupId);
    if (!group) throw new AppError('GROUP_NOT_FOUND', `group ${groupId} does not exist`);
    const next: Group = { ...group, updatedAt: now };
    if (tiers === null) delete next.idleTiers;
    else next.idleTiers = tiers;
    return (await this.store.groups.put(next)).group;
  }

  /** null: the instance follows its group's (or the system's) tiers again. */
  async setInstance(instance: Instance, tiers: IdleTier[] | null, now: number): Promise<Instance> {
    const fleet = { ...(instance.fleet ?? {}) };
    if (tiers === null) delete fleet.idleTiers;
    else fleet.idleTiers = tiers;
    return this.store.instances.update(instance.id, { fleet }, { now });
  }
}
