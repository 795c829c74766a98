// The files API's path rules, pure: the agent's parse of `/`-rooted paths and
// the SFTP session's chroot normalisation.

import { describe, expect, it } from 'vitest';
import { parseFilePath } from '../../src/agent/instance-files.js';
import { chrootPath } from '../../src/server/sftp/sftp-server.js';

describe('parseFilePath', () => {
  it.each([
    ['/', []],
    ['/server.properties', ['server.properties']],
    ['/world/region/', ['world', 'region']],
  ])('%s → %j', (raw, segments) => {
    expect(parseFilePath(raw).segments).toEqual(segments);
  });

  it.each(['server.properties', '/../etc', '/a/../b', '/a//b', '/a/./b', '//etc', '/a\u0000b', '/a\\b', '/a\nb'])('refuses %j', (raw) => {
    expect(() => parseFilePath(raw)).toThrow(expect.objectContaining({ code: 'FILE_PATH_INVALID' }));
  });
});

describe('chrootPath', () => {
  it.each([
    ['.', '/'],
    ['', '/'],
    ['..', '/'],
    ['/../../etc/passwd', '/etc/passwd'],
    ['world/../level.dat', '/level.dat'],
    ['/a//b/./c/', '/a/b/c'],
  ])('%j → %j', (raw, expected) => {
    expect(chrootPath(raw)).toBe(expected);
  });
});
