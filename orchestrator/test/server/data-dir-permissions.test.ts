// The data dir holds the database (token digests, secret settings, the audit log), the admin token, layers and
// backups: it is 0700 and the SQLite files 0600, also when they existed with wider modes (issue 26).

import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, SQLITE_FILE_NAME } from '../../src/store/open-store.js';
import { testOrchestrator, type TestOrchestrator } from './support.js';

const mode = async (p: string) => (await stat(p)).mode & 0o777;
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('data dir permissions', () => {
  it('a new data dir is 0700 and the database, its WAL and the admin token 0600', async () => {
    const t: TestOrchestrator = await testOrchestrator();
    cleanups.push(() => t.close());
    await t.call('PUT', '/api/v1/templates/tpl/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: 64 } } });
    expect(await mode(t.dataDir)).toBe(0o700);
    expect(await mode(path.join(t.dataDir, SQLITE_FILE_NAME))).toBe(0o600);
    expect(await mode(path.join(t.dataDir, `${SQLITE_FILE_NAME}-wal`))).toBe(0o600);
    expect(await mode(path.join(t.dataDir, 'admin-token'))).toBe(0o600);
  });

  it('an existing world-readable data dir and database are narrowed', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ec-perm-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const dataDir = path.join(dir, 'data');
    await mkdir(dataDir, { mode: 0o755 });
    await chmod(dataDir, 0o755);
    await writeFile(path.join(dataDir, SQLITE_FILE_NAME), '', { mode: 0o644 });
    await chmod(path.join(dataDir, SQLITE_FILE_NAME), 0o644);
    const t = await testOrchestrator({ dataDir });
    cleanups.push(() => t.close());
    expect(await mode(dataDir)).toBe(0o700);
    expect(await mode(path.join(dataDir, SQLITE_FILE_NAME))).toBe(0o600);
  });

  it('an explicit sqlite: file is 0600 and its new directory 0700', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ec-perm-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'db', 'x.db');
    const store = await openStore(`sqlite:${file}`, path.join(dir, 'data'));
    cleanups.push(() => store.close());
    expect(await mode(file)).toBe(0o600);
    expect(await mode(path.dirname(file))).toBe(0o700);
  });
});
