// The template's file denylist, pure: gitignore-like patterns (names at any
// depth, anchored paths, `*`/`**`/`?`, directories covering their contents,
// `!` allowing again), and the refusal naming the path and the pattern.

import { describe, expect, it } from 'vitest';
import { assertAllowed, compileDenylist, deniedBy } from '../../src/eggs/file-denylist.js';
import { isAppError } from '../../src/shared/errors.js';

describe('file denylist', () => {
  const rules = compileDenylist([
    'server.properties',
    '/config/*.secret',
    'plugins/**/token.yml',
    '*.jar',
    '!allowed.jar',
    'cache/',
    'log?.txt',
  ]);

  it.each([
    ['/server.properties', 'server.properties'],
    ['/world/server.properties', 'server.properties'],
    ['/config/db.secret', '/config/*.secret'],
    ['/plugins/a/b/token.yml', 'plugins/**/token.yml'],
    ['/plugins/token.yml', 'plugins/**/token.yml'],
    ['/paper.jar', '*.jar'],
    ['/cache', 'cache/'],
    ['/cache/deep/file.bin', 'cache/'],
    ['/sub/cache/file.bin', 'cache/'],
    ['/log1.txt', 'log?.txt'],
  ])('denies %s (by %s)', (path, pattern) => {
    expect(deniedBy(rules, path)).toBe(pattern);
  });

  it.each(['/', '/server.properties.bak', '/sub/config/db.secret', '/allowed.jar', '/log10.txt', '/level.json', '/plugins/a/other.yml'])(
    'allows %s',
    (path) => {
      expect(deniedBy(rules, path)).toBeUndefined();
    },
  );

  it('refuses with FILE_DENIED naming the path and the pattern; an empty or control-character entry is a validation error', () => {
    let caught: unknown;
    try {
      assertAllowed(rules, '/paper.jar');
    } catch (err) {
      caught = err;
    }
    expect(isAppError(caught) && caught.code).toBe('FILE_DENIED');
    expect((caught as Error).message).toBe("/paper.jar is denied by the template's file denylist (*.jar): it cannot be read or written");
    for (const bad of ['', '!', 'a\u0000b'])
      expect(() => compileDenylist([bad])).toThrow(/fileDenylist\/0: a denylist entry is a non-empty path pattern/);
  });
});
