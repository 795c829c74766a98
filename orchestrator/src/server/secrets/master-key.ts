// The orchestrator's master key: 32 random bytes that never enter the
// database. Everything secret the control plane must be able to recompute or
// decrypt is derived from it with HKDF, one purpose string per use (secret
// settings at rest, the per-host agent call credential). Where it comes from,
// first match wins: ENDERCLOUD_SECRET_KEY (base64 of 32 bytes),
// ENDERCLOUD_SECRET_KEY_FILE (a file holding that, e.g. a mounted KMS/secret
// store file), else `<dataDir>/secret-key`, generated (0600) at first start.
// Several replicas must be given the same key (env or file).

import { createHash, hkdfSync, randomBytes } from 'node:crypto';
import { chmod, link, readFile, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../shared/errors.js';

export const SECRET_KEY_FILE = 'secret-key';
const KEY_BYTES = 32;

export interface MasterKeySource {
  /** ENDERCLOUD_SECRET_KEY: base64 of 32 bytes. */
  key?: string | undefined;
  /** ENDERCLOUD_SECRET_KEY_FILE: a file holding the base64 key. */
  keyFile?: string | undefined;
  dataDir: string;
}

export class MasterKey {
  private constructor(
    private readonly bytes: Buffer,
    /** Where the key came from (logs, errors): never the key itself. */
    readonly source: string,
  ) {}

  /** The key of `parseMasterKey` (tests and tools). */
  static fromBytes(bytes: Buffer, source: string): MasterKey {
    if (bytes.length !== KEY_BYTES)
      throw new AppError('VALIDATION_FAILED', `${source}: the secret key must be ${KEY_BYTES} bytes (got ${bytes.length})`);
    return new MasterKey(Buffer.from(bytes), source);
  }

  /** A 32-byte key for one purpose (HKDF-SHA256); the same purpose always gives the same key. */
  derive(purpose: string): Buffer {
    return Buffer.from(hkdfSync('sha256', this.bytes, Buffer.alloc(0), `endercloud:${purpose}`, KEY_BYTES));
  }

  /** A short public fingerprint: tells two keys apart without revealing either. */
  fingerprint(): string {
    return createHash('sha256').update(this.derive('fingerprint')).digest('hex').slice(0, 16);
  }
}

/** Reads a base64 key; the error names the source, never the value. */
export function parseMasterKey(text: string, source: string): MasterKey {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/_-]+=*$/.test(trimmed))
    throw new AppError('VALIDATION_FAILED', `${source}: the secret key must be base64 of ${KEY_BYTES} random bytes`);
  return MasterKey.fromBytes(Buffer.from(trimmed, trimmed.includes('-') || trimmed.includes('_') ? 'base64url' : 'base64'), source);
}

/** The configured key, else the data dir's key file, else a new one written there (0600). */
export async function loadMasterKey(source: MasterKeySource): Promise<MasterKey> {
  if (source.key !== undefined) return parseMasterKey(source.key, 'ENDERCLOUD_SECRET_KEY');
  if (source.keyFile !== undefined) {
    const text = await readFile(source.keyFile, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new AppError('VALIDATION_FAILED', `ENDERCLOUD_SECRET_KEY_FILE: cannot read ${source.keyFile} (${err.code ?? err.message})`);
    });
    return parseMasterKey(text, `ENDERCLOUD_SECRET_KEY_FILE ${source.keyFile}`);
  }
  const file = path.join(source.dataDir, SECRET_KEY_FILE);
  try {
    const text = await readFile(file, 'utf8');
    if ((await stat(file)).mode & 0o077) await chmod(file, 0o600);
    return parseMasterKey(text, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, `${randomBytes(KEY_BYTES).toString('base64')}\n`, { mode: 0o600 });
  // link, not rename: two processes starting at once on one data dir keep the first key, never replace it.
  try {
    await link(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    await unlink(tmp);
  }
  return parseMasterKey(await readFile(file, 'utf8'), file);
}
