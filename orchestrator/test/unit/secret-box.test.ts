// The secret-settings cipher (server/secrets/secret-box.ts): the envelope's
// pure parts as a table, and sealing bound to key, row and field.

import { describe, expect, it } from 'vitest';
import { MasterKey } from '../../src/server/secrets/master-key.js';
import { formatEnvelope, parseEnvelope, SecretBox } from '../../src/server/secrets/secret-box.js';

const FP = '0123456789abcdef';
const IV = Buffer.alloc(12, 1).toString('base64url');
const CT = Buffer.alloc(20, 2).toString('base64url');

describe('secret envelope', () => {
  it.each([
    ['a well-formed value', `ec1:${FP}:${IV}:${CT}`, null],
    ['another version', `ec2:${FP}:${IV}:${CT}`, /not a sealed value of this version \(expected prefix ec1:, got "ec2"\)/],
    ['plain JSON', '{"A":"1"}', /not a sealed value of this version/],
    ['too few fields', `ec1:${FP}:${IV}`, /4 fields separated by ':' \(got 3\)/],
    ['too many fields', `ec1:${FP}:${IV}:${CT}:x`, /got 5/],
    ['a bad fingerprint', `ec1:XYZ:${IV}:${CT}`, /fingerprint of a sealed value must be 16 hex digits/],
    ['a non-base64url IV', `ec1:${FP}:a+b/:${CT}`, /must be base64url/],
    ['a short IV', `ec1:${FP}:${Buffer.alloc(8).toString('base64url')}:${CT}`, /the IV must be 12 bytes \(got 8\)/],
    ['no tag', `ec1:${FP}:${IV}:${Buffer.alloc(15).toString('base64url')}`, /shorter than its 16-byte authentication tag/],
  ])('%s', (_name, text, error) => {
    if (error === null) {
      const e = parseEnvelope(text, 'ctx');
      expect(e.fingerprint).toBe(FP);
      expect(formatEnvelope(e)).toBe(text);
    } else {
      expect(() => parseEnvelope(text, 'instances/x/secretSettings')).toThrow(error);
      expect(() => parseEnvelope(text, 'instances/x/secretSettings')).toThrow(/^instances\/x\/secretSettings: /);
    }
  });
});

describe('secret box', () => {
  const key = MasterKey.fromBytes(Buffer.alloc(32, 9), 'test');
  const box = SecretBox.fromMasterKey(key);

  it('seals with a fresh IV each time, under the master key fingerprint, and opens what it sealed', () => {
    const a = box.seal('{"RCON_PASSWORD":"hunter2"}', 'instances/i1/secretSettings');
    const b = box.seal('{"RCON_PASSWORD":"hunter2"}', 'instances/i1/secretSettings');
    expect(a).not.toBe(b);
    expect(a.startsWith(`ec1:${key.fingerprint()}:`)).toBe(true);
    expect(a).not.toContain('hunter2');
    expect(box.open(a, 'instances/i1/secretSettings')).toBe('{"RCON_PASSWORD":"hunter2"}');
  });

  it('does not open a value moved to another row or field, or altered', () => {
    const sealed = box.seal('secret', 'instances/i1/secretSettings');
    expect(() => box.open(sealed, 'instances/i2/secretSettings')).toThrow(
      /instances\/i2\/secretSettings does not open under secret key [0-9a-f]{16}: it was altered, or sealed for another row or field/,
    );
    const e = parseEnvelope(sealed, 'x');
    e.sealed[0] = e.sealed[0]! ^ 1;
    expect(() => box.open(formatEnvelope(e), 'instances/i1/secretSettings')).toThrow(/altered/);
  });

  it('names both fingerprints for a value sealed under another key, and never a key', () => {
    const other = SecretBox.fromMasterKey(MasterKey.fromBytes(Buffer.alloc(32, 8), 'test'));
    const sealed = other.seal('secret', 'c');
    let message = '';
    try {
      box.open(sealed, 'c');
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain(`sealed under secret key ${other.fingerprint}, but this orchestrator's key is ${box.fingerprint}`);
    expect(message).toMatch(/ENDERCLOUD_SECRET_KEY or ENDERCLOUD_SECRET_KEY_FILE/);
    expect(message).not.toContain(Buffer.alloc(32, 9).toString('base64'));
  });

  it('uses a key derived for secret settings, not the master key itself', () => {
    const raw = new SecretBox(Buffer.alloc(32, 9), key.fingerprint());
    expect(() => raw.open(box.seal('x', 'c'), 'c')).toThrow(/does not open/);
    expect(() => new SecretBox(Buffer.alloc(16), FP)).toThrow(/must be 32 bytes \(got 16\)/);
  });
});
