// Runs the store contract against SQLite (a fresh file per test), plus the
// SQLite-specific setup: default file location, WAL and foreign keys.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/store/open-store.js';
import { openSqliteStore } from '../../src/store/sqlite-store.js';
import type { Store } from '../../src/store/store.js';
import { heartbeat, T0 } from './fixtures.js';
import { runStoreContract } from './store-contract.js';

const root = mkdtempSync(path.join(tmpdir(), 'ec-sqlite-store-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

let n = 0;
runStoreContract('sqlite', async () => {
  n += 1;
  const file = path.join(root, `contract-${n}.db`);
  const opened: Store[] = [];
  const store = openSqliteStore(file);
  opened.push(store);
  return {
    store,
    openSecond: () => {
      const s = openSqliteStore(file);
      opened.push(s);
      return s;
    },
    dispose: async () => {
      await Promise.all(opened.map((s) => s.close()));
      rmSync(file, { force: true });
      rmSync(`${file}-wal`, { force: true });
      rmSync(`${file}-shm`, { force: true });
    },
  };
});

describe('openStore (sqlite)', () => {
  it('defaults to <dataDir>/endercloud.db in WAL mode with foreign keys, migrated, and reopens with its data', async () => {
    const dataDir = path.join(root, 'data-default');
    const store = await openStore(undefined, dataDir);
    try {
      expect(store.dialect).toBe('sqlite');
      await store.hosts.upsertHeartbeat(heartbeat('h1'), T0);
    } finally {
      await store.close();
    }
    const file = path.join(dataDir, 'endercloud.db');
    expect(existsSync(file)).toBe(true);
    const raw = new Database(file, { readonly: true });
    try {
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
    } finally {
      raw.close();
    }
    const reopened = await openStore('', dataDir);
    try {
      expect((await reopened.hosts.get('h1'))?.status).toBe('RECOVERING');
    } finally {
      await reopened.close();
    }
  });

  it('accepts sqlite:PATH and refuses an unknown scheme with a clear error', async () => {
    const file = path.join(root, 'explicit', 'x.db');
    const store = await openStore(`sqlite:${file}`, path.join(root, 'unused'));
    await store.close();
    expect(existsSync(file)).toBe(true);
    await expect(openStore('mysql://localhost/x', root)).rejects.toMatchObject({
      code: 'VALIDATION_FAILED',
      message: expect.stringContaining('postgres://'),
    });
  });

  it('a transaction takes the write lock when it begins (BEGIN IMMEDIATE), so another process cannot slip a write in', async () => {
    const file = path.join(root, 'immediate.db');
    const store = openSqliteStore(file);
    const other = new Database(file, { timeout: 0 });
    try {
      await store.migrate();
      await store.transaction(async (tx) => {
        await tx.hosts.list(); // a read only: a deferred BEGIN would not lock yet
        expect(() =>
          other.prepare("insert into api_tokens (id, name, hashed_secret, scopes, created_at) values ('x', 'x', 'x', '[]', 0)").run(),
        ).toThrow(/database is locked/);
      });
      other.prepare("insert into api_tokens (id, name, hashed_secret, scopes, created_at) values ('y', 'y', 'y', '[]', 0)").run();
      expect((await store.tokens.get('y'))?.name).toBe('y');
    } finally {
      other.close();
      await store.close();
    }
  });

  it('enforces foreign keys (history needs its instance)', async () => {
    const store = openSqliteStore(':memory:');
    try {
      await store.migrate();
      await expect(
        store.history.append({
          instanceId: 'ghost',
          at: T0,
          from: null,
          to: 'draft',
          reason: 'x',
          actor: null,
          commandId: null,
          details: null,
        }),
      ).rejects.toThrow(/FOREIGN KEY/);
    } finally {
      await store.close();
    }
  });
});
