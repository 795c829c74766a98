// Secret key rotation (docs/production.md "Secret key"): every secret setting
// re-sealed from the current key to a new one in one transaction and the new
// fingerprint recorded; refused while an orchestrator runs; afterwards the old
// key is refused at start and the new one reads every value. The command
// itself (npm run secret-key:rotate) runs as a child process.

import { spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { RECONCILER_LEASE } from '../../src/server/leadership/leader-lease.js';
import { parseMasterKey } from '../../src/server/secrets/master-key.js';
import { rotateSecretKey } from '../../src/server/secrets/secret-settings.js';
import { openStore } from '../../src/store/open-store.js';
import { instance } from '../store/fixtures.js';
import { newDataDir, TEST_SECRET_KEY, testOrchestrator, type TestOrchestrator } from './support.js';

const PACKAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const NEW_KEY = Buffer.alloc(32, 0x4e).toString('base64');
const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function orchestrator(dataDir: string, env: Record<string, string> = {}): Promise<TestOrchestrator> {
  const t = await testOrchestrator({ dataDir, keepDataDir: true, env });
  cleanups.push(() => t.close());
  return t;
}

/** An orchestrator on a new data dir with one instance holding `secret`; answers the dir and the instance id. */
async function seeded(secret: string): Promise<{ dataDir: string; id: string; t: TestOrchestrator }> {
  const dataDir = await newDataDir();
  cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
  const t = await orchestrator(dataDir);
  await t.call('PUT', '/api/v1/templates/tpl/versions/1', {
    body: { image: 'busybox:1', resources: { memoryMb: 64 }, variables: [{ name: 'PW', type: 'string', secret: true, required: true }] },
  });
  await t.call('PUT', '/api/v1/groups/g', {
    body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'tpl', version: '1' } }] },
  });
  // No host: the instance waits in the store, which is all a rotation touches.
  const now = t.clock.now();
  const row = await t.o.store.instances.create({
    ...instance('i-rot', { groupId: 'g', variantId: 'v', secretSettings: { PW: secret } }),
    createdAt: now,
    updatedAt: now,
  });
  return { dataDir, id: row.id, t };
}

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/server/rotate-secret-key.ts', ...args], {
      cwd: PACKAGE_DIR,
      env: { PATH: process.env.PATH ?? '', ENDERCLOUD_SFTP_PORT: '0', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('secret key rotation', () => {
  it('re-seals every secret under the new key in one go; refused while an orchestrator runs; then the old key is refused and the new one reads them', async () => {
    const { dataDir, id, t } = await seeded('pw-before-rotation');
    const networkSecret = await t.o.ctx.networkSecret.get();
    const current = parseMasterKey(TEST_SECRET_KEY, 'current');
    const next = parseMasterKey(NEW_KEY, 'next');
    await expect(rotateSecretKey(t.o.store, current, next, { now: 1, leaseName: RECONCILER_LEASE })).rejects.toThrow(
      /orchestrator .* is running \(it holds the reconciler lease until .*\): stop every replica before rotating the secret key/,
    );
    await t.close();
    cleanups.pop();
    const store = await openStore(undefined, dataDir);
    try {
      await expect(rotateSecretKey(store, current, current, { now: 1, leaseName: RECONCILER_LEASE })).rejects.toThrow(/is the current key/);
      await expect(rotateSecretKey(store, next, current, { now: 1, leaseName: RECONCILER_LEASE })).rejects.toThrow(
        new RegExp(
          `has fingerprint ${next.fingerprint()}, but this database's secret settings are sealed under the key with fingerprint ${current.fingerprint()}`,
        ),
      );
      expect(await rotateSecretKey(store, current, next, { now: 1, leaseName: RECONCILER_LEASE })).toEqual({
        instances: 1,
        from: current.fingerprint(),
        to: next.fingerprint(),
      });
    } finally {
      await store.close();
    }
    await expect(testOrchestrator({ dataDir, keepDataDir: true })).rejects.toThrow(
      new RegExp(`has fingerprint ${current.fingerprint()}, but .* sealed under the key with fingerprint ${next.fingerprint()}`),
    );
    const after = await orchestrator(dataDir, { ENDERCLOUD_SECRET_KEY: NEW_KEY });
    expect((await after.o.store.instances.get(id))?.secretSettings).toEqual({ PW: 'pw-before-rotation' });
    // The network's forwarding secret is re-sealed too: the same value opens under the new key.
    expect(await after.o.store.system.get('network-secret')).toBe(networkSecret);
  });

  it('npm run secret-key:rotate -- --new-key-file F rotates the stopped database; the orchestrator then starts with F', async () => {
    const { dataDir, id, t } = await seeded('pw-cli');
    await t.close();
    cleanups.pop();
    const file = path.join(dataDir, 'new-key');
    await writeFile(file, `${NEW_KEY}\n`, { mode: 0o600 });
    const env = { ENDERCLOUD_DATA_DIR: dataDir, ENDERCLOUD_SECRET_KEY: TEST_SECRET_KEY };
    const usage = await run([], env);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/--new-key-file is required\nusage: secret-key:rotate --new-key-file FILE/);
    const done = await run(['--new-key-file', file], env);
    expect(done.stderr).toBe('');
    expect(done.code).toBe(0);
    expect(done.stdout).toContain(
      `re-sealed the secret settings of 1 instance(s) from key ${parseMasterKey(TEST_SECRET_KEY, 'x').fingerprint()} (ENDERCLOUD_SECRET_KEY) to key ${parseMasterKey(NEW_KEY, 'x').fingerprint()}`,
    );
    expect(done.stdout).not.toContain(NEW_KEY);
    // Run again with the old key as current: refused, nothing changed.
    const again = await run(['--new-key-file', file], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/sealed under the key with fingerprint/);
    const after = await orchestrator(dataDir, { ENDERCLOUD_SECRET_KEY: '', ENDERCLOUD_SECRET_KEY_FILE: file });
    expect((await after.o.store.instances.get(id))?.secretSettings).toEqual({ PW: 'pw-cli' });
  });
});
