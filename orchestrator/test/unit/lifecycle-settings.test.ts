// Guards pending changes: immediate vs restart_required settings, image/label
// changes (immediate or next_start), the replacement plan that keeps data and
// the prior intent, the immutable user, secret redaction and revision pruning.

import { describe, expect, it } from 'vitest';
import type { Instance } from '../../src/domain/index.js';
import {
  REDACTED,
  assertUserUnchanged,
  containerUserString,
  planContainerConfigChange,
  planReplacement,
  planStart,
  pruneRevisions,
  redactSecrets,
  validateContainerUser,
  type ReplaceableInstance,
} from '../../src/lifecycle/settings.js';
import { planSettingsPatch } from '../../src/server/services/pending-changes.js';
import { instance as fixtureInstance, templateSpec } from '../store/fixtures.js';

const template = templateSpec({
  variables: [
    { name: 'motd', type: 'string', apply: 'immediate' },
    { name: 'whitelist', type: 'boolean', apply: 'immediate' },
    { name: 'maxPlayers', type: 'integer', apply: 'restart_required', validation: { min: 1, max: 500 } },
    { name: 'viewDistance', type: 'integer', apply: 'restart_required' },
    { name: 'rconPassword', type: 'string', secret: true },
  ],
});
const applied = { motd: 'hi', whitelist: false, maxPlayers: 20, viewDistance: 10 };
const live = (overrides: Partial<Instance> = {}): Instance => ({
  ...fixtureInstance('i1', { settings: applied }),
  version: 1,
  ...overrides,
});
const pending = (key: string, value: unknown) => ({ key: `settings.${key}`, value, mode: 'restart_required', requestedAt: 5 });

// The planner the settings PATCH runs (lifecycle-service → planSettingsPatch), pure.
describe('planSettingsPatch', () => {
  it.each([
    ['an immediate change applies now, nothing pending', live(), { motd: 'hello' }, ['motd'], []],
    ['a restart_required change is pending', live(), { maxPlayers: 50 }, [], [pending('maxPlayers', 50)]],
    ['a mix splits into now and pending', live(), { motd: 'x', viewDistance: 12 }, ['motd'], [pending('viewDistance', 12)]],
    [
      'earlier pending changes stay pending with new ones (applied together)',
      live({ pendingChanges: [pending('maxPlayers', 50) as Instance['pendingChanges'][number]] }),
      { viewDistance: 12 },
      [],
      [pending('maxPlayers', 50), pending('viewDistance', 12)],
    ],
    [
      'setting a pending key back to its applied value clears it',
      live({ pendingChanges: [pending('maxPlayers', 50) as Instance['pendingChanges'][number]] }),
      { maxPlayers: 20 },
      [],
      [],
    ],
    ['an unchanged immediate value is not re-applied', live(), { motd: 'hi' }, [], []],
  ])('%s', (_name, instance, settings, appliedKeys, pendingChanges) => {
    const plan = planSettingsPatch(instance, template, { settings }, 5);
    expect(plan.applied).toEqual(appliedKeys);
    expect(plan.patch.pendingChanges).toEqual(pendingChanges);
    expect(plan.replaceNow).toBe(false);
  });

  it('a secret waits for the next replacement, redacted in the pending list', () => {
    const plan = planSettingsPatch(live(), template, { settings: { rconPassword: 'n3w' } }, 5);
    expect(plan.patch.pendingChanges).toEqual([
      { key: 'settings.rconPassword', value: REDACTED, mode: 'restart_required', requestedAt: 5, secret: true },
    ]);
    expect(JSON.stringify(plan.patch.pendingChanges)).not.toContain('n3w');
  });

  it.each([
    [{ user: { mode: 'image' } }, 'IMMUTABLE', /user is chosen when the instance is created and can never be changed/],
    [{ settings: { difficulty: 'hard' } }, 'VALIDATION_FAILED', /settings\/difficulty is not a setting of this instance's template/],
    [{ settings: { maxPlayers: 'many' } }, 'VALIDATION_FAILED', /settings\/maxPlayers/],
    [{ settings: { maxPlayers: 9000 } }, 'VALIDATION_FAILED', /settings\/maxPlayers/],
  ])('refuses %j', (body, code, message) => {
    expect(() => planSettingsPatch(live(), template, body, 5)).toThrow(
      expect.objectContaining({ code, message: expect.stringMatching(message) }),
    );
  });
});

describe('image and label changes', () => {
  const cfg = { image: 'mc:1.20', labels: { team: 'a' } };
  it.each([
    [
      'immediate image change replaces now',
      { image: 'mc:1.21' },
      'immediate',
      { containerConfigPending: false, replaceNow: true, desiredConfig: { image: 'mc:1.21', labels: { team: 'a' } } },
    ],
    [
      'next_start image change sets container_config_pending',
      { image: 'mc:1.21' },
      'next_start',
      { containerConfigPending: true, replaceNow: false },
    ],
    [
      'label change and removal',
      { labels: { team: null, tier: 'gold' } },
      'next_start',
      { containerConfigPending: true, desiredConfig: { image: 'mc:1.20', labels: { tier: 'gold' } } },
    ],
    ['no effective change does nothing', { image: 'mc:1.20' }, 'immediate', { containerConfigPending: false, replaceNow: false }],
  ] as const)('%s', (_name, change, mode, expected) => {
    const result = planContainerConfigChange(cfg, cfg, change, mode);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.value).toMatchObject(expected);
  });

  it('refuses managed labels and bad image references', () => {
    const managed = planContainerConfigChange(cfg, cfg, { labels: { 'orchestrator.instance': 'x' } }, 'immediate');
    expect(managed.ok || managed.error.message).toMatch(/managed by EnderCloud/);
    const image = planContainerConfigChange(cfg, cfg, { image: 'bad image;rm' }, 'immediate');
    expect(image.ok || image.error.code).toBe('VALIDATION_FAILED');
  });
});

describe('planReplacement', () => {
  const base: ReplaceableInstance = {
    desiredState: 'running',
    containerRunning: true,
    appliedConfig: { image: 'mc:1.20', labels: {} },
    desiredConfig: { image: 'mc:1.21', labels: {} },
    desiredSettings: { maxPlayers: 50 },
  };
  const kinds = (i: ReplaceableInstance) => planReplacement(i).map((s) => s.kind);

  it('a running instance: pull first, graceful stop, replace keeping data, start again', () => {
    expect(kinds(base)).toEqual([
      'pull_image',
      'stop_container',
      'remove_container',
      'create_container',
      'mark_applied',
      'start_container',
      'await_readiness',
    ]);
    expect(planReplacement(base)).toContainEqual({ kind: 'remove_container', keepData: true });
  });
  it('a stopped instance stays stopped during an immediate replacement', () => {
    expect(kinds({ ...base, desiredState: 'stopped', containerRunning: false })).toEqual([
      'pull_image',
      'remove_container',
      'create_container',
      'mark_applied',
    ]);
  });
  it('settings-only replacement pulls nothing', () => {
    expect(kinds({ ...base, desiredConfig: base.appliedConfig })[0]).toBe('stop_container');
  });
  it('the next explicit start replaces when changes are pending, else just starts', () => {
    const pending = planStart({ ...base, containerRunning: false, containerConfigPending: true, pendingSettings: 0 }).map((s) => s.kind);
    expect(pending).toEqual(['pull_image', 'remove_container', 'create_container', 'mark_applied', 'start_container', 'await_readiness']);
    const plain = planStart({
      ...base,
      containerRunning: false,
      desiredConfig: base.appliedConfig,
      containerConfigPending: false,
      pendingSettings: 0,
    });
    expect(plain.map((s) => s.kind)).toEqual(['start_container', 'await_readiness']);
  });
});

describe('container user', () => {
  it.each([
    [undefined, { mode: 'endercloud' }, '1000:1000'],
    [{ mode: 'endercloud' }, { mode: 'endercloud' }, '1000:1000'],
    [{ mode: 'custom', uid: 1234, gid: 50 }, { mode: 'custom', uid: 1234, gid: 50 }, '1234:50'],
    [{ mode: 'image' }, { mode: 'image' }, undefined],
  ])('accepts %j', (input, spec, docker) => {
    const result = validateContainerUser(input);
    expect(result.ok && result.value).toEqual(spec);
    if (result.ok) expect(containerUserString(result.value)).toBe(docker);
  });
  it.each([[{ mode: 'root' }], [{ mode: 'custom', uid: -1, gid: 0 }], [{ mode: 'custom', uid: 1 }], ['1000:1000']])(
    'refuses %j',
    (input) => {
      const result = validateContainerUser(input);
      expect(result.ok || result.error.code).toBe('VALIDATION_FAILED');
    },
  );
  it('can never be edited after creation', () => {
    expect(() => assertUserUnchanged({ mode: 'endercloud' }, { mode: 'custom', uid: 1, gid: 1 })).toThrow(/never be changed/);
    expect(() => assertUserUnchanged({ mode: 'endercloud' }, { mode: 'endercloud' })).not.toThrow();
    expect(() => assertUserUnchanged({ mode: 'endercloud' }, undefined)).not.toThrow();
  });
});

describe('revisions', () => {
  it('redacts secret keys at any depth and KEY=value env strings', () => {
    const config = {
      settings: { motd: 'hi', rconPassword: 'hunter2' },
      env: { RCON_PASSWORD: 'hunter2', EULA: 'TRUE' },
      envList: ['RCON_PASSWORD=hunter2', 'EULA=TRUE'],
      nested: [{ rconPassword: 'x' }],
    };
    const redacted = redactSecrets(config, ['rconPassword', 'RCON_PASSWORD']);
    expect(JSON.stringify(redacted)).not.toContain('hunter2');
    expect(redacted.settings).toEqual({ motd: 'hi', rconPassword: REDACTED });
    expect(redacted.env.EULA).toBe('TRUE');
    expect(redacted.envList).toEqual([`RCON_PASSWORD=${REDACTED}`, 'EULA=TRUE']);
    expect(redacted.nested[0]?.rconPassword).toBe(REDACTED);
    expect(config.settings.rconPassword).toBe('hunter2'); // the input is not mutated
  });

  it('keeps the newest 20 plus the pinned applied revision', () => {
    const revisions = Array.from({ length: 30 }, (_, i) => ({ revision: i + 1 }));
    const { keep, drop } = pruneRevisions(revisions, 20, [3]);
    expect(keep.map((r) => r.revision)).toEqual([3, ...Array.from({ length: 20 }, (_, i) => i + 11)]);
    expect(drop.map((r) => r.revision)).toEqual([1, 2, 4, 5, 6, 7, 8, 9, 10]);
    expect(pruneRevisions(revisions.slice(0, 5)).drop).toEqual([]);
  });
});
