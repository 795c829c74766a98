// TEST DOUBLE support — the route tests' editable view of a MemoryRuntime:
// the plain InventoryItem array the old hand-written fake agent exposed,
// kept in step with the runtime's managed containers both ways.

import { mkdirSync } from 'node:fs';
import { LABEL, labelledHostPort } from '../../src/agent/labels.js';
import type { ContainerState } from '../../src/agent/runtime.js';
import { fakeImageId, instanceOf, type MemoryContainer, type MemoryRuntime } from './memory-runtime.js';

/** One managed container in the shape route tests read and edit (the old fake agent's). */
export interface InventoryItem {
  instanceId: string;
  containerId?: string;
  groupId?: string | null;
  variantId?: string | null;
  state?: string;
  hostPort?: number | null;
  exitCode?: number | null;
  image?: string;
  labels?: Record<string, string>;
}

const TRACKED = ['containerId', 'groupId', 'variantId', 'state', 'hostPort', 'exitCode', 'image', 'labels'] as const;
type Snapshot = Pick<InventoryItem, (typeof TRACKED)[number]>;

export interface InventoryMirrorOptions {
  agentId: string;
  runtime: MemoryRuntime;
  inventory: InventoryItem[];
  /** Where the agent keeps an instance's runtime directory (a seeded container gets one, like a real one has). */
  instanceDirectory(instanceId: string): string;
}

/**
 * Keeps a plain array of InventoryItem and the runtime's managed containers in
 * step, both ways: a pushed item becomes a container, a spliced one is
 * removed, an edited field is applied; then every container is mirrored back
 * into the items (updated in place, so references stay live). Synchronous, so
 * it never interleaves with an agent call.
 */
export class InventoryMirror {
  private readonly snapshots = new WeakMap<InventoryItem, string>();
  private tracked = new Set<InventoryItem>();

  constructor(private readonly o: InventoryMirrorOptions) {}

  sync(): void {
    this.applyTestEdits();
    this.mirrorRuntime();
  }

  private containerOf(instanceId: string): MemoryContainer | undefined {
    return [...this.o.runtime.containers.values()].find(
      (c) => c.labels[LABEL.managed] === 'true' && c.labels[LABEL.host] === this.o.agentId && instanceOf(c) === instanceId,
    );
  }

  private applyTestEdits(): void {
    const { inventory, runtime } = this.o;
    for (const item of this.tracked) {
      if (inventory.includes(item) || inventory.some((i) => i.instanceId === item.instanceId)) continue;
      const c = this.containerOf(item.instanceId);
      if (c) runtime.containers.delete(c.id);
    }
    for (const item of inventory) {
      const before = this.snapshots.get(item);
      const c = this.containerOf(item.instanceId);
      if (before === undefined && !c) this.seed(item);
      else if (c) this.applyEdits(c, item, before === undefined ? undefined : (JSON.parse(before) as Snapshot));
    }
  }

  private seed(item: InventoryItem): void {
    const labels: Record<string, string> = {
      ...item.labels,
      [LABEL.managed]: 'true',
      [LABEL.host]: this.o.agentId,
      [LABEL.instance]: item.instanceId,
      [LABEL.group]: item.groupId ?? '',
      [LABEL.variant]: item.variantId ?? '',
      [LABEL.session]: '',
      [LABEL.labelKeys]: Object.keys(item.labels ?? {})
        .sort()
        .join(','),
      ...(item.hostPort ? { [LABEL.hostPort]: String(item.hostPort) } : {}),
    };
    const state = (item.state ?? 'running') as ContainerState;
    this.o.runtime.seed({
      id: item.containerId ?? `c-${item.instanceId}`,
      name: `endercloud-${item.variantId ?? 'v'}-${item.instanceId}`,
      labels,
      state,
      ...(item.image !== undefined ? { image: item.image } : {}),
      ...(item.exitCode !== undefined ? { exitCode: item.exitCode } : {}),
    });
    mkdirSync(this.o.instanceDirectory(item.instanceId), { recursive: true });
  }

  /** Applies the fields the test changed since the last sync (all given fields for an item not seen before). */
  private applyEdits(c: MemoryContainer, item: InventoryItem, before: Snapshot | undefined): void {
    const changed = (k: (typeof TRACKED)[number]) => item[k] !== undefined && JSON.stringify(item[k]) !== JSON.stringify(before?.[k]);
    if (before === undefined) return; // a second item for a known container: the container wins
    if (changed('image')) {
      c.image = item.image as string;
      c.imageId = fakeImageId(c.image);
    }
    if (changed('labels')) {
      for (const k of (c.labels[LABEL.labelKeys] ?? '').split(',').filter((x) => x !== '')) delete c.labels[k];
      Object.assign(c.labels, item.labels);
      c.labels[LABEL.labelKeys] = Object.keys(item.labels ?? {})
        .sort()
        .join(',');
    }
    if (changed('groupId')) c.labels[LABEL.group] = item.groupId ?? '';
    if (changed('variantId')) c.labels[LABEL.variant] = item.variantId ?? '';
    if (changed('hostPort')) c.labels[LABEL.hostPort] = String(item.hostPort);
    if (changed('state')) {
      c.state = item.state as ContainerState;
      if (c.state === 'exited') c.finishedAt = new Date().toISOString();
      if (c.state === 'running') c.startedAt = new Date().toISOString();
      if (c.state === 'exited' && !changed('exitCode')) c.exitCode = 0;
    }
    if (changed('exitCode')) c.exitCode = item.exitCode as number;
  }

  private mirrorRuntime(): void {
    const { inventory, runtime } = this.o;
    const seen = new Set<string>();
    for (const c of runtime.containers.values()) {
      if (c.labels[LABEL.managed] !== 'true' || c.labels[LABEL.host] !== this.o.agentId) continue;
      const instanceId = instanceOf(c) ?? '';
      seen.add(instanceId);
      const view = viewOf(c);
      const item = inventory.find((i) => i.instanceId === instanceId);
      if (item) {
        Object.assign(item, view);
        if (view.labels === undefined) delete item.labels;
      } else {
        inventory.push({ instanceId, ...view });
      }
    }
    for (let i = inventory.length - 1; i >= 0; i--) if (!seen.has(inventory[i]!.instanceId)) inventory.splice(i, 1);
    for (const item of inventory) this.snapshots.set(item, JSON.stringify(Object.fromEntries(TRACKED.map((k) => [k, item[k]]))));
    this.tracked = new Set(inventory);
  }
}

function viewOf(c: MemoryContainer): Omit<InventoryItem, 'instanceId'> {
  const caller = (c.labels[LABEL.labelKeys] ?? '').split(',').filter((k) => k !== '' && c.labels[k] !== undefined);
  return {
    containerId: c.id,
    groupId: c.labels[LABEL.group] || null,
    variantId: c.labels[LABEL.variant] || null,
    state: c.state,
    hostPort: labelledHostPort(c.labels) ?? null,
    exitCode: c.startedAt === null ? null : c.exitCode,
    image: c.image,
    ...(caller.length > 0 ? { labels: Object.fromEntries(caller.map((k) => [k, c.labels[k] as string])) } : { labels: undefined }),
  };
}
