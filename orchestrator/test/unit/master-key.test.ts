import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadMasterKey, MasterKey, parseMasterKey, SECRET_KEY_FILE } from '../../src/server/secrets/master-key.js';

const dirs: string[] = [];
async function dir(): Promise<string> {
  const d = await mkdtemp(path.join(tmpdir(), 'ec-key-'));
  dirs.push(d);
  return d;
}
afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

describe('master key', () => {
  it('is generated once beside the database, owner-only, and read back the same', async () => {
    const d = await dir();
    const a = await loadMasterKey({ dataDir: d });
    expect((await stat(path.join(d, SECRET_KEY_FILE))).mode & 0o777).toBe(0o600);
    const b = await loadMasterKey({ dataDir: d });
    expect(b.fingerprint()).toBe(a.fingerprint());
    expect(b.derive('x').equals(a.derive('x'))).toBe(true);
  });

  it('derives a different key per purpose', () => {
    const k = MasterKey.fromBytes(Buffer.alloc(32, 7), 'test');
    expect(k.derive('settings').equals(k.derive('agent-call'))).toBe(false);
    expect(k.derive('settings')).toHaveLength(32);
  });

  it('prefers the env key, then the key file, and names the source in errors without the value', async () => {
    const d = await dir();
    const key = Buffer.alloc(32, 1).toString('base64');
    const file = path.join(d, 'kms-key');
    await writeFile(file, `${Buffer.alloc(32, 2).toString('base64')}\n`);
    const fromEnv = await loadMasterKey({ key, keyFile: file, dataDir: d });
    expect(fromEnv.source).toBe('ENDERCLOUD_SECRET_KEY');
    const fromFile = await loadMasterKey({ keyFile: file, dataDir: d });
    expect(fromFile.fingerprint()).not.toBe(fromEnv.fingerprint());
    await expect(readFile(path.join(d, SECRET_KEY_FILE))).rejects.toThrow(/ENOENT/);
    await expect(loadMasterKey({ keyFile: path.join(d, 'missing'), dataDir: d })).rejects.toThrow(
      /ENDERCLOUD_SECRET_KEY_FILE: cannot read/,
    );
    expect(() => parseMasterKey('c2hvcnQ=', 'ENDERCLOUD_SECRET_KEY')).toThrow(/ENDERCLOUD_SECRET_KEY: the secret key must be 32 bytes/);
    expect(() => parseMasterKey('not base64 !', 'X')).toThrow(/X: the secret key must be base64/);
  });
});

describe('master key creation race', () => {
  it('two loads at once on one data dir agree on one key', async () => {
    const d = await dir();
    const keys = await Promise.all(Array.from({ length: 8 }, () => loadMasterKey({ dataDir: d })));
    expect(new Set(keys.map((k) => k.fingerprint())).size).toBe(1);
  });
});
