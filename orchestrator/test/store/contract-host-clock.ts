// Contract tests: a host's beat time never moves backwards (a beat that waited
// on a replica cut from the database lands after newer ones, on every write
// path: full upsert, coalesced flush, a second connection), and the database
// clock the leases run on is readable (leases.now()).

import { describe, expect, it } from 'vitest';
import type { StoreHandle } from './store-contract.js';
import { heartbeat, T0 } from './fixtures.js';

export function hostClockContract(handle: StoreHandle): void {
  describe('heartbeat time never moves backwards', () => {
    it('a late full beat with an older time keeps the newer beat time, and its answer says so', async () => {
      const store = handle.store();
      await store.hosts.upsertHeartbeat(heartbeat('hl'), T0);
      await store.hosts.upsertHeartbeat(heartbeat('hl'), T0 + 5000);
      // Delayed on another replica: it reports changed resources too, so it is a full write there.
      const late = await handle.second().hosts.upsertHeartbeat(heartbeat('hl', { version: '0.2.0' }), T0 + 1000);
      expect(late.host).toMatchObject({ lastHeartbeatAt: T0 + 5000, version: '0.2.0' });
      expect((await store.hosts.get('hl'))?.lastHeartbeatAt).toBe(T0 + 5000);
      // And the late time does not make the host stale: 3 intervals after T0 + 1000 it is still fresh.
      expect(await store.hosts.markStaleOffline(T0 + 4500, 3)).toEqual([]);
      expect(await store.hosts.markStaleOffline(T0 + 8001, 3)).toEqual(['hl']);
    });

    it("an OFFLINE host's late beat starts its recovery but keeps the newer beat time", async () => {
      const store = handle.store();
      await store.hosts.upsertHeartbeat(heartbeat('ho'), T0 + 5000);
      expect(await store.hosts.markStaleOffline(T0 + 9000, 3)).toEqual(['ho']);
      const late = await store.hosts.upsertHeartbeat(heartbeat('ho'), T0 + 2000);
      expect(late).toMatchObject({ startedRecovery: true, host: { status: 'RECOVERING', lastHeartbeatAt: T0 + 5000 } });
    });

    it('a coalesced beat flushed after a newer full write from another connection does not move the time back', async () => {
      const store = handle.store();
      const slow = { heartbeatIntervalMs: 2000 };
      await store.hosts.upsertHeartbeat(heartbeat('hk', slow), T0);
      await store.hosts.setStatus('hk', 'ONLINE', { now: T0 });
      await store.hosts.upsertHeartbeat(heartbeat('hk', slow), T0 + 2000); // full write: learns ONLINE
      expect((await store.hosts.upsertHeartbeat(heartbeat('hk', slow), T0 + 4000)).host.lastHeartbeatAt).toBe(T0 + 4000); // coalesced
      await handle.second().hosts.upsertHeartbeat(heartbeat('hk', slow), T0 + 9000);
      await store.hosts.markStaleOffline(T0 + 9000, 3); // flushes T0 + 4000
      expect((await handle.second().hosts.get('hk'))?.lastHeartbeatAt).toBe(T0 + 9000);
    });
  });

  describe('leases.now (the database clock)', () => {
    it("answers epoch milliseconds from the database: on this machine, the test's clock give or take scheduling", async () => {
      const before = Date.now();
      const now = await handle.store().leases.now();
      expect(Number.isSafeInteger(now)).toBe(true);
      expect(now).toBeGreaterThanOrEqual(before - 1000);
      expect(now).toBeLessThanOrEqual(Date.now() + 1000);
    });
  });
}
