// Offline detection on the database clock (HA, both dialects): a replica whose
// own clock runs a minute fast sweeps with the database's time, so a host that
// beats (stamped by another, honest replica) is never marked OFFLINE, while a
// silent one still is. Real time: the database clock cannot be moved by hand.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatabaseClock } from '../../src/server/database-clock.js';
import { OfflineDetector } from '../../src/server/services/offline-detector.js';
import { openStore } from '../../src/store/open-store.js';
import type { Store } from '../../src/store/store.js';
import { heartbeat } from '../store/fixtures.js';
import { freshPostgres, silentLogger, until } from './support.js';

const SKEW_MS = 60_000;

let pgDb: { url: string; drop(): Promise<void> } | undefined;
let sqliteDir: string | undefined;
beforeAll(async () => {
  pgDb = await freshPostgres('ec_ha_offline_clock');
  sqliteDir = await mkdtemp(path.join(tmpdir(), 'ec-offline-clock-'));
});
afterAll(async () => {
  await pgDb?.drop();
  if (sqliteDir) await rm(sqliteDir, { recursive: true, force: true });
});

const dialects: Array<[string, () => Promise<Store>]> = [
  ['sqlite', () => openStore(undefined, sqliteDir!)],
  ['postgres', () => openStore(pgDb!.url, sqliteDir!)],
];

describe.each(dialects)('offline detection on the database clock (%s)', (_name, open) => {
  it('a replica whose clock runs a minute fast marks a freshly beating host nothing, and a silent one OFFLINE', async () => {
    const store = await open();
    const honest = new DatabaseClock({ read: () => store.leases.now(), logger: silentLogger });
    const skewed = new DatabaseClock({ read: () => store.leases.now(), logger: silentLogger, local: { now: () => Date.now() + SKEW_MS } });
    let pump: NodeJS.Timeout | undefined;
    try {
      await honest.sync();
      await skewed.sync();
      expect(Math.abs(skewed.offsetMs + SKEW_MS)).toBeLessThan(1000);
      expect(Math.abs(skewed.now() - honest.now())).toBeLessThan(1000);
      // h-live beats every 100 ms (declared 1 s: stale after 3 s of silence) through the honest replica;
      // h-dead beat once, declaring 50 ms.
      const beat = () => store.hosts.upsertHeartbeat(heartbeat('h-live'), honest.now());
      await beat();
      await store.hosts.upsertHeartbeat(heartbeat('h-dead', { heartbeatIntervalMs: 50 }), honest.now());
      pump = setInterval(() => void beat().catch(() => undefined), 100);
      const detector = new OfflineDetector({ store, clock: skewed, logger: silentLogger, missedBeats: 3, sweepIntervalMs: 100 });
      const marked: string[] = [];
      // The silent host going OFFLINE is the sign the start grace is over and the sweep acts.
      await until(
        async () => {
          marked.push(...(await detector.sweep()));
          return marked.includes('h-dead');
        },
        'h-dead marked OFFLINE',
        15_000,
      );
      marked.push(...(await detector.sweep()));
      expect(marked).toEqual(['h-dead']);
      expect((await store.hosts.get('h-live'))?.status).not.toBe('OFFLINE');
      // The skewed replica's own clock would have marked it at once (what the sweep used to compare with).
      clearInterval(pump);
      pump = undefined;
      expect(await store.hosts.markStaleOffline(Date.now() + SKEW_MS, 3)).toEqual(['h-live']);
    } finally {
      if (pump) clearInterval(pump);
      await store.close();
    }
  });
});
