// The explicit choice for a manual backup (docs/lifecycle.md "Backups and restore"), pure: when a backup of a
// running server would stop it, and why online save is unavailable.

import { describe, expect, it } from 'vitest';
import type { TemplateSpec } from '../../src/domain/index.js';
import { manualBackupStopReason } from '../../src/lifecycle/backup.js';
import { uploadedBackupId } from '../../src/server/services/backup-requests.js';

const rcon = { port: 25575, passwordVariable: 'RCON_PASSWORD' };
const tpl = (backup: TemplateSpec['backup'], withRcon: boolean) =>
  ({ backup, stop: { signal: 'SIGTERM', timeoutMs: 1000, ...(withRcon ? { rcon } : {}) } }) as unknown as TemplateSpec;

describe('manual backup stop reason', () => {
  const cases: [name: string, template: TemplateSpec | undefined, running: boolean, password: boolean, reason: string | undefined][] = [
    ['a stopped server never needs the choice', tpl(undefined, false), false, false, undefined],
    ['online save with RCON and a password: no stop', tpl({ onlineSave: true }, true), true, true, undefined],
    ['no onlineSave in the template', tpl({}, true), true, true, 'the template does not enable backup.onlineSave'],
    ['no template at all', undefined, true, false, 'the template does not enable backup.onlineSave'],
    ['onlineSave without stop.rcon', tpl({ onlineSave: true }, false), true, true, 'the template declares no stop.rcon'],
    [
      'onlineSave and RCON but no password',
      tpl({ onlineSave: true }, true),
      true,
      false,
      'the instance has no RCON password in RCON_PASSWORD',
    ],
  ];
  it.each(cases)('%s', (_name, template, running, password, reason) => {
    expect(manualBackupStopReason(template, running, password)).toBe(reason);
  });
});

describe('uploadedBackupId', () => {
  it.each([
    [Date.UTC(2026, 11, 4, 3, 20, 5, 123), 'imp-0123456789abcdef', 'upload-20261204T032005Z-01234567'],
    [Date.UTC(2026, 0, 1), 'abcdefghij', 'upload-20260101T000000Z-abcdefgh'],
  ])('%s %s is %s', (now, uploadId, expected) => {
    expect(uploadedBackupId(now, uploadId)).toBe(expected);
  });
});
