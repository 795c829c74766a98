// The store contract suite: every Store implementation (SQLite, PostgreSQL)
// runs exactly these tests through runStoreContract(name, factory).

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/store/store.js';
import type { AppError } from '../../src/shared/errors.js';
import { heartbeat, instance, T0, uid } from './fixtures.js';
import { catalogContract } from './contract-catalog.js';
import { commandContract } from './contract-commands.js';
import { instanceContract } from './contract-instances.js';
import { recordsContract } from './contract-records.js';
import { systemContract } from './contract-system.js';
import { unclaimedContract } from './contract-unclaimed.js';
import { installationRequestContract } from './contract-installation-requests.js';
import { leaseContract } from './contract-leases.js';
import { hostClockContract } from './contract-host-clock.js';
import { allocationContract } from './contract-allocation.js';
import { backupsContract } from './contract-backups.js';
import { webSessionContract } from './contract-web-sessions.js';
import { schedulesContract } from './contract-schedules.js';
import { secretsContract, TEST_BOX } from './contract-secrets.js';

export interface StoreHarness {
  /** A store on an empty database, not yet migrated. */
  store: Store;
  /** Another store with its own connection(s) on the same database (not migrated). */
  openSecond(): Store;
  /** Closes every store it opened and removes the database. */
  dispose(): Promise<void>;
}
export type StoreFactory = () => Promise<StoreHarness>;

/** The current test's fresh migrated store, and a second one on the same database. */
export interface StoreHandle {
  store(): Store;
  second(): Store;
  /** A further store on the same database, without a secret codec (closed with the harness). */
  bare(): Store;
}

export function runStoreContract(name: string, factory: StoreFactory): void {
  describe(`store contract: ${name}`, () => {
    let harness: StoreHarness | undefined;
    let second: Store | undefined;
    beforeEach(async () => {
      harness = await factory();
      await harness.store.migrate();
      // As the orchestrator does at start (server/secrets/secret-settings.ts); the secrets contract also opens stores without one.
      harness.store.useSecretCodec(TEST_BOX);
    });
    afterEach(async () => {
      second = undefined;
      await harness?.dispose();
      harness = undefined;
    });
    const handle: StoreHandle = {
      store: () => harness!.store,
      second: () => {
        if (!second) {
          second = harness!.openSecond();
          second.useSecretCodec(TEST_BOX);
        }
        return second;
      },
      bare: () => harness!.openSecond(),
    };

    describe('migrations', () => {
      it('are idempotent: running them again, from a second connection too, changes nothing and keeps data', async () => {
        const store = handle.store();
        await store.hosts.upsertHeartbeat(heartbeat('h-mig'), T0);
        await store.migrate();
        await handle.second().migrate();
        expect((await store.hosts.get('h-mig'))?.id).toBe('h-mig');
        expect((await handle.second().hosts.list()).map((h) => h.id)).toEqual(['h-mig']);
      });
    });

    describe('transactions', () => {
      it('roll back every write when the callback throws', async () => {
        const store = handle.store();
        await store.hosts.upsertHeartbeat(heartbeat('h-tx', { resources: { memoryMb: 4096, cpus: 2 } }), T0);
        await store.hosts.setStatus('h-tx', 'ONLINE', { now: T0 });
        const boom = new Error('boom');
        await expect(
          store.transaction(async (tx) => {
            expect(await tx.hosts.reserveMemory('h-tx', 1024)).toBe(true);
            await tx.instances.create(instance('i-tx', { hostId: 'h-tx' }));
            await tx.commands.create({ id: 'c-tx', kind: 'create', payload: {}, requestId: 'r', instanceId: 'i-tx' }, T0);
            await tx.history.append({
              instanceId: 'i-tx',
              at: T0,
              from: null,
              to: 'draft',
              reason: 'created',
              actor: null,
              commandId: null,
              details: null,
            });
            await tx.transaction(async (inner) =>
              inner.audit.append({
                at: T0,
                actor: 'a',
                action: 'x',
                targetKind: 'instance',
                targetId: 'i-tx',
                params: {},
                result: 'ok',
                errorCode: null,
                requestId: null,
              }),
            );
            throw boom;
          }),
        ).rejects.toBe(boom);
        expect((await store.hosts.get('h-tx'))?.memoryReservedMb).toBe(0);
        expect(await store.instances.get('i-tx')).toBeUndefined();
        expect(await store.commands.get('c-tx')).toBeUndefined();
        expect(await store.audit.list()).toEqual([]);
      });

      it('commit all writes together and return the callback value', async () => {
        const store = handle.store();
        const result = await store.transaction(async (tx) => {
          await tx.instances.create(instance('i-ok'));
          await tx.commands.create({ id: 'c-ok', kind: 'create', payload: { a: 1 }, requestId: 'r', instanceId: 'i-ok' }, T0);
          return 42;
        });
        expect(result).toBe(42);
        expect((await store.instances.get('i-ok'))?.id).toBe('i-ok');
        expect((await store.commands.get('c-ok'))?.payload).toEqual({ a: 1 });
      });
    });

    describe('hosts', () => {
      it('first heartbeat registers the host as RECOVERING; later ones keep its status and refresh fields', async () => {
        const store = handle.store();
        const first = await store.hosts.upsertHeartbeat(heartbeat('h1'), T0);
        expect(first).toMatchObject({ created: true, startedRecovery: true });
        expect(first.host).toMatchObject({ id: 'h1', status: 'RECOVERING', memoryReservedMb: 0, firstSeenAt: T0, lastHeartbeatAt: T0 });
        expect(first.host.resources).toEqual({ memoryMb: 8192, cpus: 4, diskBytes: 100 * 1024 ** 3 });
        expect(first.host.portRange).toEqual({ first: 30000, last: 30099 });

        const again = await store.hosts.upsertHeartbeat(heartbeat('h1', { version: '0.2.0' }), T0 + 1000);
        expect(again).toMatchObject({ created: false, startedRecovery: false });
        expect(again.host).toMatchObject({
          status: 'RECOVERING',
          version: '0.2.0',
          controlUrl: first.host.controlUrl,
          firstSeenAt: T0,
          lastHeartbeatAt: T0 + 1000,
        });
        // The controlUrl is pinned: a beat naming another one is refused and writes nothing.
        const moved = await store.hosts
          .upsertHeartbeat(heartbeat('h1', { controlUrl: 'http://10.0.0.2:7000' }), T0 + 1200)
          .catch((e: AppError) => e);
        expect(moved).toMatchObject({
          code: 'CONFLICT',
          details: { reason: 'control-url-pinned', reportedControlUrl: 'http://10.0.0.2:7000' },
        });
        expect((moved as AppError).message).toMatch(/re-enrol to move a host/);
        expect(await store.hosts.get('h1')).toMatchObject({
          controlUrl: first.host.controlUrl,
          lastHeartbeatAt: T0 + 1000,
          version: '0.2.0',
        });

        expect(await store.hosts.setStatus('h1', 'ONLINE', { from: ['RECOVERING'], now: T0 + 1500 })).toMatchObject({ status: 'ONLINE' });
        const online = await store.hosts.upsertHeartbeat(heartbeat('h1'), T0 + 2000);
        expect(online.host.status).toBe('ONLINE');
        expect(online.startedRecovery).toBe(false);
      });

      it('enrol inserts a RECOVERING host with generation 1; re-enrol bumps it, moves the controlUrl and replaces the credential hash', async () => {
        const store = handle.store();
        const first = await store.hosts.enrol({ heartbeat: heartbeat('he'), credentialHash: 'hash-1' }, T0);
        expect(first.previousControlUrl).toBeNull();
        expect(first.host).toMatchObject({ id: 'he', status: 'RECOVERING', credentialGeneration: 1, enrolledAt: T0 });
        expect(first.host.credentialRevokedAt).toBeUndefined();
        expect(await store.hosts.findByCredentialHash('hash-1')).toEqual({ id: 'he' });
        // Enrolled: a beat without the host credential is refused; with it, it is taken.
        const shared = await store.hosts.upsertHeartbeat(heartbeat('he'), T0 + 100).catch((e: AppError) => e);
        expect(shared).toMatchObject({ code: 'FORBIDDEN' });
        const own = await store.hosts.upsertHeartbeat(heartbeat('he'), T0 + 200, { hostCredential: true });
        expect(own.host).toMatchObject({ lastHeartbeatAt: T0 + 200, credentialGeneration: 1 });

        const again = await store.hosts.enrol(
          { heartbeat: heartbeat('he', { controlUrl: 'http://10.0.0.9:8081' }), credentialHash: 'hash-2' },
          T0 + 300,
        );
        expect(again.previousControlUrl).toBe(first.host.controlUrl);
        expect(again.host).toMatchObject({
          controlUrl: 'http://10.0.0.9:8081',
          credentialGeneration: 2,
          status: 'RECOVERING',
          firstSeenAt: T0,
        });
        expect(await store.hosts.findByCredentialHash('hash-1')).toBeUndefined();
        expect(await store.hosts.findByCredentialHash('hash-2')).toEqual({ id: 'he' });

        const revoked = await store.hosts.revokeCredential('he', T0 + 400);
        expect(revoked).toMatchObject({ credentialGeneration: 2, credentialRevokedAt: T0 + 400 });
        expect(await store.hosts.findByCredentialHash('hash-2')).toBeUndefined();
        await expect(store.hosts.revokeCredential('nope', T0)).rejects.toMatchObject({ code: 'HOST_NOT_FOUND' });
      });

      it('a join token is consumed once, also by two racing enrolments; a revoked one is not consumed', async () => {
        const store = handle.store();
        const base = {
          agentId: null,
          createdBy: 'admin',
          createdAt: T0,
          expiresAt: T0 + 3_600_000,
          usedAt: null,
          usedBy: null,
          revokedAt: null,
        };
        await store.joinTokens.create({ ...base, id: 'jt1', hashedSecret: 'sec-1' });
        await store.joinTokens.create({ ...base, id: 'jt2', hashedSecret: 'sec-2', agentId: 'h9' });
        expect((await store.joinTokens.findByHashedSecret('sec-2'))?.agentId).toBe('h9');
        const races = await Promise.all([store.joinTokens.consume('jt1', 'a', T0 + 1), store.joinTokens.consume('jt1', 'b', T0 + 2)]);
        expect(races.filter(Boolean)).toHaveLength(1);
        expect(await store.joinTokens.get('jt1')).toMatchObject({ usedBy: expect.stringMatching(/^[ab]$/) });
        await store.joinTokens.revoke('jt2', T0 + 5);
        expect(await store.joinTokens.consume('jt2', 'h9', T0 + 6)).toBe(false);
        expect((await store.joinTokens.list()).map((t) => t.id).sort()).toEqual(['jt1', 'jt2']);
      });

      it('conditional status change applies only from the given statuses; unknown host is HOST_NOT_FOUND', async () => {
        const store = handle.store();
        await store.hosts.upsertHeartbeat(heartbeat('h2'), T0);
        expect(await store.hosts.setStatus('h2', 'ONLINE', { from: ['OFFLINE'], now: T0 })).toBeUndefined();
        expect((await store.hosts.get('h2'))?.status).toBe('RECOVERING');
        await expect(store.hosts.setStatus('nope', 'ONLINE', { now: T0 })).rejects.toMatchObject({ code: 'HOST_NOT_FOUND' });
      });

      it('stale hosts go OFFLINE after the missed beats, and their next heartbeat starts a recovery', async () => {
        const store = handle.store();
        await store.hosts.upsertHeartbeat(heartbeat('h-live'), T0);
        await store.hosts.upsertHeartbeat(heartbeat('h-stale'), T0);
        await store.hosts.setStatus('h-stale', 'ONLINE', { now: T0 });
        await store.hosts.upsertHeartbeat(heartbeat('h-live'), T0 + 2500);
        expect(await store.hosts.markStaleOffline(T0 + 3000, 3)).toEqual([]);
        expect(await store.hosts.markStaleOffline(T0 + 3001, 3)).toEqual(['h-stale']);
        expect((await store.hosts.get('h-stale'))?.status).toBe('OFFLINE');
        expect(await store.hosts.countByStatus()).toEqual({ ONLINE: 0, RECOVERING: 1, OFFLINE: 1, MAINTENANCE: 0 });
        const back = await store.hosts.upsertHeartbeat(heartbeat('h-stale'), T0 + 5000);
        expect(back).toMatchObject({ created: false, startedRecovery: true });
        expect(back.host).toMatchObject({ status: 'RECOVERING', statusChangedAt: T0 + 5000 });
      });

      it('maintenance is stored with its message; list filters by status', async () => {
        const store = handle.store();
        await store.hosts.upsertHeartbeat(heartbeat('hm'), T0);
        const h = await store.hosts.setMaintenance('hm', { enabled: true, message: 'disk swap', since: T0 }, T0);
        expect(h.maintenance).toEqual({ enabled: true, message: 'disk swap', since: T0 });
        await store.hosts.setStatus('hm', 'MAINTENANCE', { now: T0 });
        expect((await store.hosts.list({ statuses: ['MAINTENANCE'] })).map((x) => x.id)).toEqual(['hm']);
        expect(await store.hosts.list({ statuses: ['ONLINE'] })).toEqual([]);
        expect((await store.hosts.setMaintenance('hm', null, T0)).maintenance).toBeNull();
        await expect(store.hosts.setMaintenance('nope', null, T0)).rejects.toMatchObject({ code: 'HOST_NOT_FOUND' });
      });

      it('memory reservation fits or fails, needs an ONLINE host by default, and release floors at zero', async () => {
        const store = handle.store();
        await store.hosts.upsertHeartbeat(heartbeat('hr', { resources: { memoryMb: 2048, cpus: 2 } }), T0);
        expect(await store.hosts.reserveMemory('hr', 512)).toBe(false); // RECOVERING: not placeable
        expect(await store.hosts.reserveMemory('hr', 512, { statuses: ['RECOVERING'] })).toBe(true);
        await store.hosts.setStatus('hr', 'ONLINE', { now: T0 });
        expect(await store.hosts.reserveMemory('hr', 1536)).toBe(true);
        expect(await store.hosts.reserveMemory('hr', 1)).toBe(false);
        expect(await store.hosts.reserveMemory('missing', 1)).toBe(false);
        expect((await store.hosts.get('hr'))?.memoryReservedMb).toBe(2048);
        await store.hosts.releaseMemory('hr', 1000);
        expect((await store.hosts.get('hr'))?.memoryReservedMb).toBe(1048);
        await store.hosts.releaseMemory('hr', 5000);
        expect((await store.hosts.get('hr'))?.memoryReservedMb).toBe(0);
        await expect(store.hosts.reserveMemory('hr', -5)).rejects.toMatchObject({ code: 'VALIDATION_FAILED' });
      });

      // Parallel calls on one store: on PostgreSQL they run on separate pool
      // connections; on SQLite they share the process's single connection.
      it('20 concurrent reservations never oversubscribe a host with room for 5', async () => {
        const store = handle.store();
        await store.hosts.upsertHeartbeat(heartbeat('hc', { resources: { memoryMb: 5 * 1000, cpus: 8 } }), T0);
        await store.hosts.setStatus('hc', 'ONLINE', { now: T0 });
        const results = await Promise.all(
          Array.from({ length: 20 }, () =>
            store.transaction(async (tx) => {
              const ok = await tx.hosts.reserveMemory('hc', 1000);
              if (ok) await tx.instances.create(instance(uid('ic'), { hostId: 'hc' }));
              return ok;
            }),
          ),
        );
        expect(results.filter(Boolean)).toHaveLength(5);
        expect((await store.hosts.get('hc'))?.memoryReservedMb).toBe(5000);
        expect((await store.instances.countByHost())['hc']).toBe(5);
      });
    });

    catalogContract(handle);
    instanceContract(handle);
    allocationContract(handle);
    commandContract(handle);
    recordsContract(handle);
    systemContract(handle);
    unclaimedContract(handle);
    installationRequestContract(handle);
    leaseContract(handle);
    hostClockContract(handle);
    backupsContract(handle);
    webSessionContract(handle);
    schedulesContract(handle);
    secretsContract(handle);
  });
}
