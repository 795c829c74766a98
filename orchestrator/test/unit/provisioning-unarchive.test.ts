// Guards where an archived world comes back (planUnarchive): its own host when
// that host is ONLINE with room; otherwise the group's placement over every host
// with the final backup from the backup store; never an empty world in place of
// a kept one (a refusal naming the instance and why).

import { describe, expect, it } from 'vitest';
import type { PlacementHost } from '../../src/placement/placement.js';
import { planUnarchive, type UnarchiveInput } from '../../src/provisioning/unarchive.js';

const host = (id: string, status: PlacementHost['status'] = 'ONLINE', memoryReservedMb = 0, memoryMb = 4096): PlacementHost => ({
  id,
  status,
  memoryMb,
  memoryReservedMb,
});
const input = (
  hosts: PlacementHost[],
  finalBackup: UnarchiveInput['finalBackup'],
  keptHostId: string | null = 'a',
  strategy: UnarchiveInput['strategy'] = 'packed',
): UnarchiveInput => ({
  instance: { name: 'event-1', groupId: 'events', memoryMb: 1024 },
  keptHostId,
  hosts,
  strategy,
  finalBackup,
});
const stored = { backupId: 'archive-1', stored: true };
const notStored = { backupId: 'archive-1', stored: false };

describe('planUnarchive', () => {
  const cases: Array<[string, UnarchiveInput, string]> = [
    [
      'kept host ONLINE with room: the kept world, even when packed would pick a busier host',
      input([host('a'), host('b', 'ONLINE', 2048)], stored),
      'kept a',
    ],
    ['kept host ONLINE with room and no backup: the kept world', input([host('a')], null), 'kept a'],
    [
      'kept host OFFLINE: restored on the host placement picks',
      input([host('a', 'OFFLINE'), host('b'), host('c', 'ONLINE', 1024)], stored),
      'restore c archive-1',
    ],
    ['kept host gone: restored elsewhere', input([host('b')], stored), 'restore b archive-1'],
    ['kept host full: restored on a host that fits', input([host('a', 'ONLINE', 3584), host('b')], stored), 'restore b archive-1'],
    ['kept host RECOVERING: restored elsewhere', input([host('a', 'RECOVERING'), host('b')], stored), 'restore b archive-1'],
    [
      'kept host in MAINTENANCE: moved off it when a backup can',
      input([host('a', 'MAINTENANCE'), host('b')], stored),
      'restore b archive-1',
    ],
    [
      'kept host in MAINTENANCE and no other host fits: stays where it is kept',
      input([host('a', 'MAINTENANCE'), host('b', 'ONLINE', 4000)], stored),
      'kept a',
    ],
    [
      'kept host in MAINTENANCE without a stored backup: stays where it is kept',
      input([host('a', 'MAINTENANCE'), host('b')], notStored),
      'kept a',
    ],
    [
      'distributed placement applies to the restore',
      {
        ...input(
          [
            host('a', 'OFFLINE'),
            { ...host('b'), groupCounts: { events: 3 } },
            { ...host('c', 'ONLINE', 2048), groupCounts: { events: 1 } },
          ],
          stored,
        ),
        strategy: 'distributed',
      },
      'restore c archive-1',
    ],
  ];
  it.each(cases)('%s', (_name, i, expected) => {
    const plan = planUnarchive(i);
    if (!plan.ok) throw plan.error;
    expect(plan.value.kind === 'kept' ? `kept ${plan.value.hostId}` : `restore ${plan.value.hostId} ${plan.value.backupId}`).toBe(expected);
  });

  it('a restore names the host that kept the world and why it is not used', () => {
    const plan = planUnarchive(input([host('a', 'OFFLINE'), host('b')], stored));
    expect(plan).toMatchObject({
      ok: true,
      value: {
        kind: 'restore',
        fromHostId: 'a',
        reason: 'archived instance event-1 is kept on host a, which is OFFLINE: restoring its final backup archive-1 on host b',
      },
    });
  });

  const refusals: Array<[string, UnarchiveInput, string, boolean, RegExp]> = [
    [
      'kept host OFFLINE, no final backup',
      input([host('a', 'OFFLINE'), host('b')], null),
      'HOST_UNAVAILABLE',
      true,
      /^archived instance event-1 is kept on host a, which is OFFLINE, and the archive has no final backup; it is not started elsewhere with an empty world/,
    ],
    [
      'kept host OFFLINE, final backup not in the store',
      input([host('a', 'OFFLINE'), host('b')], notStored),
      'HOST_UNAVAILABLE',
      true,
      /final backup archive-1 is not in the orchestrator's backup store/,
    ],
    [
      'kept host gone, no backup: will not come back',
      input([host('b')], null),
      'HOST_UNAVAILABLE',
      false,
      /was kept on host a, which is no longer registered/,
    ],
    ['no host recorded, no backup', input([host('b')], null, null), 'HOST_UNAVAILABLE', false, /has no host recorded/],
    [
      'kept host full, no backup',
      input([host('a', 'ONLINE', 3584), host('b')], null),
      'NO_CAPACITY',
      true,
      /is kept on host a, which has 512 MiB free of the 1024 MiB it needs, and the archive has no final backup/,
    ],
    [
      'kept host OFFLINE, backup stored, no host fits',
      input([host('a', 'OFFLINE'), host('b', 'ONLINE', 3584)], stored),
      'NO_CAPACITY',
      true,
      /is kept on host a, which is OFFLINE, and no other host can take its final backup archive-1: no ONLINE host has 1024 MiB free/,
    ],
  ];
  it.each(refusals)('refuses: %s', (_name, i, code, retryable, message) => {
    const plan = planUnarchive(i);
    expect(plan.ok).toBe(false);
    if (plan.ok) return;
    expect([plan.error.code, plan.error.retryable]).toEqual([code, retryable]);
    expect(plan.error.message).toMatch(message);
  });

  it('never answers restore without a stored backup, nor a host that is not ONLINE for a restore (random host sets)', () => {
    let seed = 7;
    const rand = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    const statuses = ['ONLINE', 'OFFLINE', 'MAINTENANCE', 'RECOVERING'] as const;
    for (let round = 0; round < 1000; round++) {
      const hosts = ['a', 'b', 'c', 'd'].slice(0, 1 + rand(4)).map((id) => host(id, statuses[rand(4)], rand(5) * 1024));
      const backup = [null, stored, notStored][rand(3)]!;
      const plan = planUnarchive(input(hosts, backup, ['a', 'z', null][rand(3)] ?? null));
      if (!plan.ok) continue;
      const chosen = hosts.find((h) => h.id === plan.value.hostId)!;
      expect(chosen.memoryMb - chosen.memoryReservedMb).toBeGreaterThanOrEqual(1024);
      if (plan.value.kind === 'restore') {
        expect(backup?.stored).toBe(true);
        expect(chosen.status).toBe('ONLINE');
      } else {
        expect(plan.value.hostId).toBe('a');
      }
    }
  });
});
