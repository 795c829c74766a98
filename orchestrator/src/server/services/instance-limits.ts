// The one place that holds every limit on a group's instance count: the
// group's scaling.maxInstances and caps.maxInstances, the template's
// caps.maxInstances and ENDERCLOUD_MAX_INSTANCES. Every path that gives a
// group one more counted instance (POST /instances, a spawn by the
// autoscaler, POST /groups/:id/spawn, a waiting allocation, a router join,
// an adoption, the start of an archived world) calls assertRoom inside the
// transaction that writes it: the count takes the placement lock (held to
// commit), so concurrent creations never pass a limit on SQLite or PostgreSQL.
// Archived worlds do not count (no container, no reserved memory).

import type { Group, TemplateSpec } from '../../domain/index.js';
import { capRefusal, limitRooms, type GroupCaps, type LimitRoom, type TemplateCap } from '../../placement/placement.js';
import type { Store } from '../../store/store.js';

/** The template of the variant being created (its caps.maxInstances counts across all groups). */
export interface LimitTemplate {
  name: string;
  spec: Pick<TemplateSpec, 'caps'>;
}

export function groupLimits(group: Group, maxTotalInstances: number | undefined): GroupCaps {
  return {
    ...group.caps,
    ...(group.scaling?.maxInstances !== undefined ? { scalingMaxInstances: group.scaling.maxInstances } : {}),
    ...(maxTotalInstances !== undefined ? { maxTotalInstances } : {}),
  };
}

/** Every limit on one more instance of the group from `template`, with its room now (call inside a store transaction). */
export async function roomsFor(
  tx: Store,
  group: Group,
  template: LimitTemplate | undefined,
  maxTotalInstances: number | undefined,
): Promise<LimitRoom[]> {
  const counts = await tx.instances.countForCaps(group.id);
  const max = template?.spec.caps?.maxInstances;
  const templateCap: TemplateCap | undefined =
    template === undefined || max === undefined
      ? undefined
      : { name: template.name, maxInstances: max, current: await countTemplateInstances(tx, template.name) };
  return limitRooms(groupLimits(group, maxTotalInstances), counts, templateCap);
}

/** Throws CAP_REACHED naming the first limit without room (call inside the transaction that writes the instance). */
export async function assertRoom(
  tx: Store,
  group: Group,
  template: LimitTemplate | undefined,
  maxTotalInstances: number | undefined,
): Promise<void> {
  const full = (await roomsFor(tx, group, template, maxTotalInstances)).find((l) => l.room === 0);
  if (full) throw capRefusal(group.id, full);
}

/** Counted instances (every state but archived) of any version of `templateName`, in every group (call under the placement lock of countForCaps). */
export async function countTemplateInstances(tx: Store, templateName: string): Promise<number> {
  let n = 0;
  for (const g of await tx.groups.list()) {
    const variants = new Set(g.variants.filter((v) => v.template.name === templateName).map((v) => v.id));
    if (variants.size === 0) continue;
    n += (await tx.instances.list({ groupId: g.id })).filter((i) => variants.has(i.variantId) && i.state !== 'archived').length;
  }
  return n;
}
