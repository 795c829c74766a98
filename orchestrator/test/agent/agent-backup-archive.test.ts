// The agent's backup archive routes without Docker: GET streams an archive
// with its sha256; PUT keeps an uploaded one only when it hashes to the given
// sha256, passes the safe-tar checks and fits the size bound; it is idempotent
// per backup id and refuses a different archive under a kept id.

import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerBackupRoutes } from '../../src/agent/backup-routes.js';
import { KeyedLock } from '../../src/agent/async-lock.js';
import { BackupService } from '../../src/agent/backups.js';
import { FsRuntimeDirectories } from '../../src/agent/runtime-directories.js';
import { errorHandler } from '../../src/shared/http.js';
import { MALICIOUS_ENTRIES, tarGzBuffer } from '../support/malicious-tar.js';

const base = mkdtempSync(join(tmpdir(), 'ec-agent-backup-archive-'));
const runtime = join(base, 'runtime');
let app: FastifyInstance;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  mkdirSync(join(runtime, 'instances', 'i1', 'world'), { recursive: true });
  writeFileSync(join(runtime, 'instances', 'i1', 'world', 'level.dat'), 'level');
  const backups = new BackupService({
    backupsDirectory: join(runtime, 'backups'),
    directories: new FsRuntimeDirectories({ runtimeDirectory: runtime, runtimeHostDirectory: runtime }),
    findOwned: async () => undefined,
    instanceLocks: new KeyedLock(),
    maxUploadBytes: 64 * 1024,
  });
  app = Fastify();
  app.setErrorHandler(errorHandler('agent', 1024 * 1024));
  await app.register(async (api) => registerBackupRoutes(api, backups), { prefix: '/api/v1' });
  await app.ready();
});

afterAll(async () => {
  await app?.close();
  rmSync(base, { recursive: true, force: true });
});

const put = (instance: string, backupId: string, body: Buffer, query: Record<string, string>) =>
  app.inject({
    method: 'PUT',
    url: `/api/v1/instances/${instance}/backups/${backupId}/archive?${new URLSearchParams(query).toString()}`,
    headers: { 'content-type': 'application/gzip' },
    payload: body,
  });

describe('agent backup archives', () => {
  let archive: Buffer;
  let info: { sha256: string; createdAt: string; sizeBytes: number };

  it('GET streams the archive with its sha256 and time', async () => {
    info = (await app.inject({ method: 'POST', url: '/api/v1/instances/i1/backups', payload: { backupId: 'b1' } })).json();
    const res = await app.inject({ method: 'GET', url: '/api/v1/instances/i1/backups/b1/archive' });
    expect(res.statusCode).toBe(200);
    archive = res.rawPayload;
    expect(res.headers['content-type']).toBe('application/gzip');
    expect(res.headers['x-backup-sha256']).toBe(info.sha256);
    expect(res.headers['x-backup-created-at']).toBe(info.createdAt);
    expect(sha(archive)).toBe(info.sha256);
    expect((await app.inject({ method: 'GET', url: '/api/v1/instances/i1/backups/nope/archive' })).statusCode).toBe(404);
  });

  it('PUT keeps a checked archive, idempotently, and refuses a different one under the same id', async () => {
    const ok = await put('i2', 'b1', archive, { sha256: info.sha256, createdAt: info.createdAt });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toEqual({ backupId: 'b1', sha256: info.sha256, sizeBytes: archive.length, createdAt: info.createdAt });
    expect((await put('i2', 'b1', archive, { sha256: info.sha256, createdAt: info.createdAt })).json()).toEqual(ok.json());
    const other = await tarGzBuffer([{ header: { name: 'x.txt', type: 'file' }, body: 'x' }]);
    const clash = await put('i2', 'b1', other, { sha256: sha(other), createdAt: info.createdAt });
    expect(clash.statusCode).toBe(409);
    expect((await app.inject({ method: 'GET', url: '/api/v1/instances/i2/backups' })).json().backups).toHaveLength(1);
  });

  it('PUT refuses a wrong checksum, an unsafe tar and an oversized body, keeping nothing', async () => {
    const wrong = await put('i3', 'b1', archive, { sha256: 'f'.repeat(64), createdAt: info.createdAt });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.json().error.code).toBe('CHECKSUM_MISMATCH');
    const evil = await tarGzBuffer(MALICIOUS_ENTRIES.symlink!);
    const unsafe = await put('i3', 'b2', evil, { sha256: sha(evil), createdAt: info.createdAt });
    expect(unsafe.statusCode).toBe(422);
    expect(unsafe.json().error.code).toBe('INVALID_ARCHIVE');
    const big = Buffer.alloc(65 * 1024, 1);
    const tooBig = await put('i3', 'b3', big, { sha256: sha(big), createdAt: info.createdAt });
    expect(tooBig.statusCode).toBe(413);
    expect((await put('i3', 'b4', archive, { sha256: info.sha256, createdAt: info.createdAt, paths: '"world"' })).statusCode).toBe(400);
    expect((await app.inject({ method: 'GET', url: '/api/v1/instances/i3/backups' })).json().backups).toEqual([]);
    expect(readdirSync(join(runtime, 'backups', 'i3'))).toEqual([]); // no temp or check leftovers
  });
});
