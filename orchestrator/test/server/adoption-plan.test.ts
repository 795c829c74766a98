// Adoption decisions, pure: label checks, lifecycle state from Docker's state,
// the container user as a spec, pending secrets and the default name.

import { describe, expect, it } from 'vitest';
import {
  adoptedLifecycle,
  adoptedUser,
  checkAdoptionLabels,
  defaultAdoptedName,
  pendingSecrets,
} from '../../src/server/services/adoption-plan.js';

const container = {
  instanceId: 'i-1',
  containerId: 'c',
  containerName: 'endercloud-v-i-1',
  groupId: 'lobby',
  variantId: 'v',
  hostPort: 31000,
  state: 'running',
};
const ENDERCLOUD = { uid: 1000, gid: 1000 };

describe('adoption plan', () => {
  it('accepts only the exact group and variant the container labels name', () => {
    expect(checkAdoptionLabels(container, 'lobby', 'v').ok).toBe(true);
    const other = checkAdoptionLabels(container, 'survival', 'v');
    expect(other.ok ? null : other.error.code).toBe('CONFLICT');
    expect(checkAdoptionLabels(container, 'lobby', 'w').ok).toBe(false);
    expect(checkAdoptionLabels({ ...container, groupId: null }, 'lobby', 'v').ok).toBe(false);
  });

  it('maps running → starting/running, paused → paused, anything else → stopped with the exit code kept', () => {
    expect(adoptedLifecycle({ state: 'running' }, 5)).toEqual({
      state: 'starting',
      desiredState: 'running',
      observed: { container: 'running', observedAt: 5 },
    });
    expect(adoptedLifecycle({ state: 'paused' }, 5)).toMatchObject({ state: 'paused', desiredState: 'paused' });
    expect(adoptedLifecycle({ state: 'exited', exitCode: 137 }, 5)).toEqual({
      state: 'stopped',
      desiredState: 'stopped',
      observed: { container: 'exited', observedAt: 5, exitCode: 137 },
    });
    expect(adoptedLifecycle({ state: 'created' }, 5).observed.container).toBe('created');
    expect(adoptedLifecycle({ state: 'weird' }, 5)).toMatchObject({ state: 'stopped', observed: { container: 'exited' } });
  });

  it('records the container user so a later replacement keeps it, and refuses user names', () => {
    const fallback = { mode: 'endercloud' } as const;
    expect(adoptedUser(undefined, ENDERCLOUD, fallback)).toEqual({ ok: true, value: fallback });
    expect(adoptedUser(null, ENDERCLOUD, fallback)).toEqual({ ok: true, value: { mode: 'image' } });
    expect(adoptedUser('1000:1000', ENDERCLOUD, { mode: 'image' })).toEqual({ ok: true, value: { mode: 'endercloud' } });
    expect(adoptedUser('25565:25565', ENDERCLOUD, fallback)).toEqual({ ok: true, value: { mode: 'custom', uid: 25565, gid: 25565 } });
    expect(adoptedUser('minecraft', ENDERCLOUD, fallback).ok).toBe(false);
  });

  it('turns generated secrets into pending secret settings, redacted in the pending changes', () => {
    expect(pendingSecrets({ RCON_PASSWORD: 'x', ENDERCLOUD_INSTANCE_TOKEN: 'y' }, 7)).toEqual({
      secretSettings: { 'pending:RCON_PASSWORD': 'x', 'pending:ENDERCLOUD_INSTANCE_TOKEN': 'y' },
      pendingChanges: [
        { key: 'settings.RCON_PASSWORD', value: '[redacted]', mode: 'restart_required', requestedAt: 7, secret: true },
        { key: 'settings.ENDERCLOUD_INSTANCE_TOKEN', value: '[redacted]', mode: 'restart_required', requestedAt: 7, secret: true },
      ],
    });
  });

  it("gives back the creator's default name for i-<hex> ids", () => {
    expect(defaultAdoptedName('lobby', 'i-0a1b2c3d4e5f')).toBe('lobby-0a1b2c3d4e5f');
    expect(defaultAdoptedName('lobby', 'legacy')).toBe('lobby-legacy');
  });
});
