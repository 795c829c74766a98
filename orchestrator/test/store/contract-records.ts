// Contract tests: tokens, audit, sessions, transfers and player sessions.

import { describe, expect, it } from 'vitest';
import type { Transfer } from '../../src/domain/index.js';
import type { StoreHandle } from './store-contract.js';
import { T0 } from './fixtures.js';

function transfer(id: string, overrides: Partial<Transfer> = {}): Transfer {
  return {
    id,
    player: 'Steve',
    playerUuid: null,
    target: { kind: 'group', id: 'lobby' },
    status: 'pending',
    resolvedInstanceId: null,
    reason: null,
    createdAt: T0,
    expiresAt: T0 + 60_000,
    consumedAt: null,
    ...overrides,
  };
}

export function recordsContract(handle: StoreHandle): void {
  describe('api tokens', () => {
    it('are found by hashed secret and name; names are unique; revoke and touch are recorded', async () => {
      const store = handle.store();
      const t = {
        id: 't1',
        name: 'ci',
        hashedSecret: 'f'.repeat(64),
        scopes: ['read', 'instances:write'],
        createdAt: T0,
        lastUsedAt: null,
        revokedAt: null,
      };
      expect(await store.tokens.create(t)).toEqual(t);
      await expect(store.tokens.create({ ...t, id: 't2', hashedSecret: 'e'.repeat(64) })).rejects.toMatchObject({ code: 'CONFLICT' });
      expect(await store.tokens.findByHashedSecret('f'.repeat(64))).toEqual(t);
      expect(await store.tokens.findByHashedSecret('0'.repeat(64))).toBeUndefined();
      await store.tokens.touch('t1', T0 + 1);
      await store.tokens.revoke('t1', T0 + 2);
      await store.tokens.revoke('t1', T0 + 3);
      expect(await store.tokens.getByName('ci')).toMatchObject({ lastUsedAt: T0 + 1, revokedAt: T0 + 2 });
      expect((await store.tokens.list()).map((x) => x.id)).toEqual(['t1']);
    });
  });

  describe('audit', () => {
    it('appends events and lists newest first with filters and paging', async () => {
      const store = handle.store();
      for (let n = 0; n < 4; n++) {
        await store.audit.append({
          at: T0 + n,
          actor: n % 2 ? 'alice' : 'bob',
          action: 'instances.delete',
          targetKind: 'instance',
          targetId: `i${n}`,
          params: { scopes: ['container'], confirm: n },
          result: n === 3 ? 'error' : 'ok',
          errorCode: n === 3 ? 'CONFIRMATION_REQUIRED' : null,
          requestId: `r${n}`,
        });
      }
      const all = await store.audit.list();
      expect(all.map((e) => e.targetId)).toEqual(['i3', 'i2', 'i1', 'i0']);
      expect(all[0]).toMatchObject({ result: 'error', errorCode: 'CONFIRMATION_REQUIRED', params: { scopes: ['container'], confirm: 3 } });
      expect((await store.audit.list({ actor: 'alice' })).map((e) => e.targetId)).toEqual(['i3', 'i1']);
      expect((await store.audit.list({ beforeId: all[1]!.id, limit: 1 })).map((e) => e.targetId)).toEqual(['i1']);
      expect(await store.audit.list({ targetKind: 'instance', targetId: 'i2' })).toHaveLength(1);
    });

    it('50 appends at once (written together): each caller gets its own entry back, every entry is stored once', async () => {
      const store = handle.store();
      const entries = await Promise.all(
        Array.from({ length: 50 }, (_, n) =>
          store.audit.append({
            at: T0 + n,
            actor: 'crowd',
            action: 'group.allocate',
            targetKind: 'group',
            targetId: `g${n}`,
            params: { n },
            result: 'ok',
            errorCode: null,
            requestId: `req-${n}`,
          }),
        ),
      );
      entries.forEach((e, n) => expect(e).toMatchObject({ targetId: `g${n}`, params: { n }, requestId: `req-${n}` }));
      expect(new Set(entries.map((e) => e.id)).size).toBe(50);
      const stored = await store.audit.list({ actor: 'crowd', limit: 100 });
      expect(stored.map((e) => e.targetId).sort()).toEqual(entries.map((e) => e.targetId).sort());
      for (const e of stored) expect(e).toEqual(entries.find((x) => x.id === e.id));
    });
  });

  describe('sessions', () => {
    it('are allocated and released', async () => {
      const store = handle.store();
      const s = {
        id: 's1',
        groupId: 'bedwars',
        instanceId: 'i1',
        status: 'allocated' as const,
        metadata: { map: 'castle' },
        createdAt: T0,
        releasedAt: null,
      };
      expect(await store.sessions.create(s)).toEqual(s);
      await expect(store.sessions.create(s)).rejects.toMatchObject({ code: 'CONFLICT' });
      expect((await store.sessions.list({ instanceId: 'i1', status: 'allocated' })).map((x) => x.id)).toEqual(['s1']);
      expect(await store.instances.releaseSession('s1', T0 + 5)).toMatchObject({
        session: { status: 'released', releasedAt: T0 + 5 },
        instanceFreed: false,
      });
      expect(await store.sessions.list({ status: 'allocated' })).toEqual([]);
      expect(await store.instances.releaseSession('nope', T0)).toBeUndefined();
    });
  });

  describe('transfers', () => {
    it('the newest pending, unexpired transfer is consumed once, matching the name case-insensitively', async () => {
      const store = handle.store();
      await store.transfers.create(transfer('old', { createdAt: T0 }));
      await store.transfers.create(transfer('new', { createdAt: T0 + 1, target: { kind: 'instance', id: 'i9' } }));
      await store.transfers.create(transfer('expired', { createdAt: T0 + 2, expiresAt: T0 + 10 }));
      const got = await store.transfers.consumePending('steve', T0 + 20, 'i9');
      expect(got).toMatchObject({
        id: 'new',
        status: 'consumed',
        consumedAt: T0 + 20,
        resolvedInstanceId: 'i9',
        target: { kind: 'instance', id: 'i9' },
      });
      expect((await store.transfers.consumePending('STEVE', T0 + 21))?.id).toBe('old');
      expect(await store.transfers.consumePending('Steve', T0 + 22)).toBeUndefined();
      expect(await store.transfers.expire(T0 + 30)).toBe(1);
      expect((await store.transfers.get('expired'))?.status).toBe('expired');
      expect((await store.transfers.list({ player: 'STEVE' })).map((t) => t.id)).toEqual(['expired', 'new', 'old']);
    });

    it('concurrent logins consume one pending transfer at most once', async () => {
      const store = handle.store();
      await store.transfers.create(transfer('only', { player: 'Alex' }));
      const results = await Promise.all(Array.from({ length: 10 }, () => store.transfers.consumePending('alex', T0 + 1)));
      expect(results.filter((r) => r !== undefined).map((r) => r!.id)).toEqual(['only']);
    });
  });

  describe('player sessions', () => {
    it('open, close and count active players per instance; a restarted router closes its sessions', async () => {
      const store = handle.store();
      const base = {
        routerId: 'r1',
        playerUuid: null,
        clientAddress: '10.0.0.1',
        status: 'active' as const,
        reason: null,
        connectedAt: T0,
        disconnectedAt: null,
      };
      await store.playerSessions.open({ ...base, id: 'p1', playerName: 'Steve', instanceId: 'i1' });
      await store.playerSessions.open({ ...base, id: 'p2', playerName: 'Alex', instanceId: 'i1' });
      await store.playerSessions.open({ ...base, id: 'p3', playerName: 'Herobrine', instanceId: 'i2', routerId: 'r2' });
      await store.playerSessions.open({ ...base, id: 'p4', playerName: 'Denied', instanceId: 'i1', status: 'denied', reason: 'full' });
      expect(await store.playerSessions.countActiveByInstance()).toEqual({ i1: 2, i2: 1 });
      expect(await store.playerSessions.close('p1', T0 + 5, 'quit')).toMatchObject({
        status: 'closed',
        disconnectedAt: T0 + 5,
        reason: 'quit',
      });
      expect((await store.playerSessions.listActive({ instanceId: 'i1' })).map((p) => p.id)).toEqual(['p2']);
      expect(await store.playerSessions.closeAllForRouter('r1', T0 + 6, 'router restarted')).toBe(1);
      expect(await store.playerSessions.countActiveByInstance()).toEqual({ i2: 1 });
      expect(await store.playerSessions.close('missing', T0)).toBeUndefined();
    });
  });
}
