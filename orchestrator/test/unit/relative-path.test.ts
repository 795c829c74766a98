// checkImportPath: the one check of a caller's path on the agent (data import, files API, egg config files).

import { describe, expect, it } from 'vitest';
import { checkImportPath } from '../../src/agent/relative-path.js';
import { AppError } from '../../src/shared/errors.js';

describe('checkImportPath', () => {
  it.each([
    [undefined, ''],
    ['', ''],
    ['.', ''],
    ['./', ''],
    ['world', 'world'],
    ['plugins/x.yml', 'plugins/x.yml'],
  ])('%j is %j', (raw, expected) => {
    expect(checkImportPath(raw)).toBe(expected);
  });

  it.each(['../etc', 'a/../../b', '/etc/passwd'])('%j is refused as UNSAFE_PATH', (raw) => {
    try {
      checkImportPath(raw);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(AppError);
      expect((err as AppError).code).toBe('UNSAFE_PATH');
      expect((err as AppError).message).toContain(JSON.stringify(raw));
    }
  });
});
