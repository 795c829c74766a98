import { describe, expect, it } from 'vitest';
import {
  effectiveIdleTiers,
  idleTierText,
  parseIdleTierText,
  SYSTEM_DEFAULT_IDLE_TIERS_TEXT,
  type IdleTier,
} from '../../src/provisioning/index.js';

const t = (after: string, afterMs: number, action: IdleTier['action']): IdleTier => ({ after, afterMs, action });
const system = [t('10m', 600_000, 'pause'), t('6h', 21_600_000, 'stop')];

describe('effectiveIdleTiers', () => {
  it.each([
    ['nothing set: the system default', undefined, undefined, system, 'system'],
    ["the group's tiers over the system's", undefined, [t('30s', 30_000, 'pause')], [t('30s', 30_000, 'pause')], 'group'],
    [
      "the instance's override over the group's",
      [t('1m', 60_000, 'stop')],
      [t('30s', 30_000, 'pause')],
      [t('1m', 60_000, 'stop')],
      'instance',
    ],
    ['a group that never sleeps ([]) is not the system default', undefined, [], [], 'group'],
    ['an instance that never sleeps in a sleeping group', [], [t('30s', 30_000, 'pause')], [], 'instance'],
  ] as const)('%s', (_name, instance, group, tiers, source) => {
    expect(effectiveIdleTiers(instance, group, system)).toEqual({ tiers, source });
  });
});

describe('parseIdleTierText', () => {
  it('reads the built-in default as pause after 10 min, stop after 6 h', () => {
    expect(parseIdleTierText(SYSTEM_DEFAULT_IDLE_TIERS_TEXT)).toEqual(system);
  });

  it.each([
    ['one tier', '10m:pause', [t('10m', 600_000, 'pause')]],
    ['off', 'off', []],
    ['empty', '  ', []],
    ['spaces around tiers', ' 30s:pause , 2m:stop ', [t('30s', 30_000, 'pause'), t('2m', 120_000, 'stop')]],
  ] as const)('%s', (_name, text, tiers) => {
    expect(parseIdleTierText(text)).toEqual(tiers);
  });

  it.each([
    ['an unknown action', '10m:explode', 'ENDERCLOUD_IDLE_TIERS[0].action: must be one of pause, stop, archive (got "explode")'],
    ['no action', '10m', 'ENDERCLOUD_IDLE_TIERS[0]: "10m" must be AFTER:ACTION'],
    ['out of order', '1h:pause,10m:stop', 'ENDERCLOUD_IDLE_TIERS[1].after: must be longer than ENDERCLOUD_IDLE_TIERS[0] (1h)'],
  ])('refuses %s naming the tier', (_name, text, message) => {
    expect(() => parseIdleTierText(text, 'ENDERCLOUD_IDLE_TIERS')).toThrow(message);
  });

  it('writes tiers back in the same form', () => {
    expect(idleTierText(system)).toBe('10m:pause,6h:stop');
    expect(idleTierText([])).toBe('off');
  });
});
