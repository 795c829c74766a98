// A STORE-LEVEL FIXTURE for allocation tests and the fleet benchmark: a group
// and a warm buffer of `online`, unallocated instances written straight into
// the store (no containers, no agent). Allocation reads only the store, so
// this is exactly what it sees; nothing here proves a real server is playable.

import { jsonClient } from './json-client.js';
import type { Store } from '../../src/store/store.js';
import { group, heartbeat, instance, templateVersion } from '../store/fixtures.js';

export interface BufferFixture {
  groupId: string;
  hostIds: string[];
  instanceIds: string[];
}

export async function seedOnlineBuffer(
  store: Store,
  opts: { groupId: string; size: number; hosts?: number; now: number },
): Promise<BufferFixture> {
  const hostIds = Array.from({ length: opts.hosts ?? 2 }, (_, i) => `${opts.groupId}-host-${i + 1}`);
  for (const id of hostIds) {
    await store.hosts.upsertHeartbeat(heartbeat(id), opts.now);
    await store.hosts.setStatus(id, 'ONLINE', { now: opts.now });
  }
  await store.templates.create(templateVersion('paper', '1.0.0'));
  await store.groups.put(
    group(opts.groupId, { kind: 'ephemeral', caps: { maxInstances: opts.size + 10 }, createdAt: opts.now, updatedAt: opts.now }),
  );
  const instanceIds: string[] = [];
  for (let n = 0; n < opts.size; n++) {
    const id = `${opts.groupId}-i${String(n).padStart(4, '0')}`;
    const hostId = hostIds[n % hostIds.length]!;
    await store.instances.create(
      instance(id, {
        name: id,
        groupId: opts.groupId,
        hostId,
        state: 'online',
        desiredState: 'running',
        stateChangedAt: opts.now,
        endpoint: { host: '127.0.0.1', port: 30000 + n },
        hostPort: 30000 + n,
        players: { online: 0, max: 20, at: opts.now },
        createdAt: opts.now,
        updatedAt: opts.now,
      }),
    );
    instanceIds.push(id);
  }
  return { groupId: opts.groupId, hostIds, instanceIds };
}

export interface AllocationAnswer {
  status: number;
  code: string | null;
  instanceId: string | null;
  allocationId: string | null;
  latencyMs: number;
}

/** The body of an allocation's answer, as the load reads it. */
export interface AllocationBody {
  instanceId?: string;
  allocationId?: string;
  error?: { code?: string; message?: string };
}

export interface LoadResult {
  answers: AllocationAnswer[];
  /** Allocations that arrived for an instance another client still held (must stay empty). */
  overlaps: string[];
  elapsedMs: number;
}

/**
 * `clients` concurrent HTTP clients (real sockets, keep-alive) make `total`
 * successful allocations in all, each releasing its allocation before asking
 * again, so the buffer never runs dry when it holds at least `clients`
 * instances. A 409 CAPACITY_EXHAUSTED is retried after a short pause; any
 * other answer stops the run. An instance counts as held from the 201 until
 * just before its DELETE is sent (so a real second holder is an overlap and a
 * release racing the next allocation is not).
 */
export async function runAllocationLoad(opts: {
  baseUrl: string;
  token: string;
  groupId: string;
  clients: number;
  total: number;
  holdMs?: number;
}): Promise<LoadResult> {
  const answers: AllocationAnswer[] = [];
  const overlaps: string[] = [];
  const held = new Map<string, string>();
  let started = 0;
  let failure: Error | undefined;
  const http = jsonClient(opts.baseUrl, { token: opts.token, maxSockets: opts.clients });
  const t0 = performance.now();
  const client = async (): Promise<void> => {
    while (started < opts.total && !failure) {
      started += 1;
      let got: AllocationAnswer | undefined;
      while (!got && !failure) {
        const t = performance.now();
        const res = await http.call<AllocationBody>('POST', `/api/v1/groups/${opts.groupId}/allocations`, { body: {} });
        const body = res.body;
        const answer: AllocationAnswer = {
          status: res.status,
          code: body.error?.code ?? null,
          instanceId: body.instanceId ?? null,
          allocationId: body.allocationId ?? null,
          latencyMs: performance.now() - t,
        };
        answers.push(answer);
        if (res.status === 201) got = answer;
        else if (res.status === 409 && answer.code === 'CAPACITY_EXHAUSTED') await new Promise((r) => setTimeout(r, 2));
        else failure = new Error(`allocation answered ${res.status} ${answer.code}: ${body.error?.message ?? ''}`);
      }
      if (!got) break;
      const other = held.get(got.instanceId!);
      if (other !== undefined) overlaps.push(`${got.instanceId}: ${other} and ${got.allocationId}`);
      held.set(got.instanceId!, got.allocationId!);
      if (opts.holdMs) await new Promise((r) => setTimeout(r, Math.random() * opts.holdMs!));
      if (held.get(got.instanceId!) === got.allocationId) held.delete(got.instanceId!);
      const rel = await http.call('DELETE', `/api/v1/allocations/${got.allocationId}`);
      if (rel.status !== 200) failure = new Error(`release of ${got.allocationId} answered ${rel.status}`);
    }
  };
  try {
    await Promise.all(Array.from({ length: opts.clients }, client));
  } finally {
    http.close();
  }
  if (failure) throw failure;
  return { answers, overlaps, elapsedMs: performance.now() - t0 };
}
