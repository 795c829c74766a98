// The codec the store seals secret values with (store/secret-codec.ts):
// AES-256-GCM under a key derived from the master key for this one purpose,
// a random 12-byte IV per value, and the row and field the value belongs to as
// associated data, so a sealed value copied to another row does not open.
// Stored as one versioned string, `ec1:<key fingerprint>:<iv>:<ciphertext+tag>`
// (base64url): a value sealed under another key is recognised and named.

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { AppError } from '../../shared/errors.js';
import type { SecretCodec } from '../../store/secret-codec.js';
import type { MasterKey } from './master-key.js';

export const ENVELOPE_VERSION = 'ec1';
/** The HKDF purpose of the secret-settings key (master-key.ts). */
export const SECRET_SETTINGS_PURPOSE = 'secret-settings';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** One sealed value, parsed. */
export interface Envelope {
  fingerprint: string;
  iv: Buffer;
  /** Ciphertext followed by the 16-byte GCM tag. */
  sealed: Buffer;
}

export function formatEnvelope(e: Envelope): string {
  return [ENVELOPE_VERSION, e.fingerprint, e.iv.toString('base64url'), e.sealed.toString('base64url')].join(':');
}

const B64URL = /^[A-Za-z0-9_-]*$/;

/** Parses a stored value; the error names `context` and what is wrong, never the value. */
export function parseEnvelope(text: string, context: string): Envelope {
  const parts = text.split(':');
  if (parts[0] !== ENVELOPE_VERSION)
    throw new AppError(
      'INTERNAL',
      `${context}: not a sealed value of this version (expected prefix ${ENVELOPE_VERSION}:, got ${JSON.stringify((parts[0] ?? '').slice(0, 8))})`,
    );
  if (parts.length !== 4) throw new AppError('INTERNAL', `${context}: a sealed value has 4 fields separated by ':' (got ${parts.length})`);
  const [, fingerprint, iv, sealed] = parts as [string, string, string, string];
  if (!/^[0-9a-f]{16}$/.test(fingerprint))
    throw new AppError('INTERNAL', `${context}: the key fingerprint of a sealed value must be 16 hex digits`);
  if (!B64URL.test(iv) || !B64URL.test(sealed))
    throw new AppError('INTERNAL', `${context}: a sealed value's IV and ciphertext must be base64url`);
  const ivBytes = Buffer.from(iv, 'base64url');
  const sealedBytes = Buffer.from(sealed, 'base64url');
  if (ivBytes.length !== IV_BYTES) throw new AppError('INTERNAL', `${context}: the IV must be ${IV_BYTES} bytes (got ${ivBytes.length})`);
  if (sealedBytes.length < TAG_BYTES)
    throw new AppError('INTERNAL', `${context}: the ciphertext is shorter than its ${TAG_BYTES}-byte authentication tag`);
  return { fingerprint, iv: ivBytes, sealed: sealedBytes };
}

/** Associated data: the envelope's header and the row/field the value belongs to. */
function associatedData(fingerprint: string, context: string): Buffer {
  return Buffer.from(`${ENVELOPE_VERSION}:${fingerprint}:${context}`, 'utf8');
}

export class SecretBox implements SecretCodec {
  private readonly key: Buffer;

  /** `key`: 32 bytes; `fingerprint`: the master key's (the one recorded in system settings). */
  constructor(
    key: Buffer,
    readonly fingerprint: string,
    private readonly random: (n: number) => Buffer = randomBytes,
  ) {
    if (key.length !== KEY_BYTES) throw new AppError('INTERNAL', `the secret-settings key must be ${KEY_BYTES} bytes (got ${key.length})`);
    this.key = Buffer.from(key);
  }

  static fromMasterKey(masterKey: MasterKey): SecretBox {
    return new SecretBox(masterKey.derive(SECRET_SETTINGS_PURPOSE), masterKey.fingerprint());
  }

  seal(plaintext: string, context: string): string {
    const iv = this.random(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(associatedData(this.fingerprint, context));
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return formatEnvelope({ fingerprint: this.fingerprint, iv, sealed });
  }

  open(stored: string, context: string): string {
    const e = parseEnvelope(stored, context);
    if (e.fingerprint !== this.fingerprint)
      throw new AppError(
        'INTERNAL',
        `${context} is sealed under secret key ${e.fingerprint}, but this orchestrator's key is ${this.fingerprint}: start it with the key the database was sealed under (ENDERCLOUD_SECRET_KEY or ENDERCLOUD_SECRET_KEY_FILE)`,
      );
    const decipher = createDecipheriv('aes-256-gcm', this.key, e.iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(associatedData(e.fingerprint, context));
    decipher.setAuthTag(e.sealed.subarray(e.sealed.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(e.sealed.subarray(0, e.sealed.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new AppError(
        'INTERNAL',
        `${context} does not open under secret key ${e.fingerprint}: it was altered, or sealed for another row or field`,
      );
    }
  }
}
