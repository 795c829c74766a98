// Sleep meets backups on the real Docker engine (issue 20): the idle tiers' stop
// takes the manual stop's path, through the template's pre-stop backup, from
// online and from paused; a failing backup follows the template's
// backup.onFailure rule, never an unexplained `error`. Idle tiers act on groups
// without a scaling policy, the system default applies to a world nobody
// configured, and `idleTiers: []` keeps a world awake.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureImage } from '../support/images.js';
import { mcServerImage } from '../support/mc-server.js';
import { startFleetStack, testServerTemplate, until, type FleetStack, type Loose } from '../support/fleet-stack.js';

let stack: FleetStack;
const RCON = { RCON_PASSWORD: 'sleep-backup-rcon-secret' };

async function putPersistent(id: string, template: string, extra: Loose = {}): Promise<void> {
  await stack.must('PUT', `/groups/${id}`, {
    kind: 'persistent',
    variants: [{ id: 'main', template: { name: template, version: '1' } }],
    ...extra,
  });
}

async function create(groupId: string, name: string, secrets?: Record<string, string>): Promise<string> {
  return (
    await stack.must('POST', '/instances', { groupId, variantId: 'main', name: `${stack.run}-${name}`, ...(secrets ? { secrets } : {}) })
  ).id as string;
}

const backups = async (id: string): Promise<Loose[]> => (await stack.must('GET', `/instances/${id}/backups`)).backups as Loose[];
const states = async (id: string): Promise<string[]> => (await stack.history(id)).map((h) => String(h.to));

beforeAll(async () => {
  // The system default in force for this orchestrator: worlds nobody configured pause after 2 s.
  stack = await startFleetStack('fl-sleep', { env: { ENDERCLOUD_IDLE_TIERS: '2s:pause' } });
  const image = await ensureImage(mcServerImage);
  const put = async (name: string, backup: Loose) =>
    stack.must('PUT', `/templates/${stack.run}-${name}/versions/1`, testServerTemplate(image, { backup }));
  await put('online-save', { onlineSave: true });
  await put('stop-first', {});
  // `level.json/x` traverses a file: every backup of it fails (UNSAFE_PATH) on the agent.
  await put('broken', { paths: ['level.json/x'] });
  await put('broken-save', { onlineSave: true, paths: ['level.json/x'] });
  await put('broken-go-on', { paths: ['level.json/x'], onFailure: 'stop_without_backup' });
  await putPersistent('paused-save', `${stack.run}-online-save`, {
    idleTiers: [
      { after: '2s', action: 'pause' },
      { after: '5s', action: 'stop' },
    ],
  });
  await putPersistent('online-stop', `${stack.run}-stop-first`, { idleTiers: [{ after: '2s', action: 'stop' }] });
  await putPersistent('broken', `${stack.run}-broken`, { idleTiers: [{ after: '2s', action: 'stop' }] });
  await putPersistent('broken-paused', `${stack.run}-broken-save`, {
    idleTiers: [
      { after: '2s', action: 'pause' },
      { after: '4s', action: 'stop' },
    ],
  });
  await putPersistent('broken-go-on', `${stack.run}-broken-go-on`, { idleTiers: [{ after: '2s', action: 'stop' }] });
  await putPersistent('plain', stack.template);
  await putPersistent('awake', stack.template, { idleTiers: [] });
}, 180_000);

afterAll(async () => {
  await stack?.close();
});

describe('sleep with backups (real containers, groups without a scaling policy)', () => {
  it('pause, then the stop tier from paused: an online-save backup first, then stopped; never error', async () => {
    const id = await create('paused-save', 'ps', RCON);
    await stack.waitState(id, 'online', 30_000);
    await stack.waitState(id, 'paused', 15_000);
    const stopped = await stack.waitState(id, 'stopped', 30_000);
    expect(stopped.activeAction).toBeNull();
    const path = await states(id);
    expect(path).not.toContain('error');
    expect(path).toEqual(expect.arrayContaining(['paused', 'online', 'backup', 'stopping', 'stopped']));
    const written = (await stack.history(id)).find((h) => h.to === 'stopping' && /backup .* written/.test(String(h.reason)));
    expect(written?.details).toMatchObject({ backupId: expect.any(String) });
    expect((await backups(id)).map((b) => b.backupId)).toContain(written!.details.backupId);
    const idle = ((await stack.must('GET', '/audit?limit=500')).entries as Loose[]).filter(
      (e) => e.action === 'instance.idle' && e.targetId === id,
    );
    expect(idle.map((e) => e.params.action).sort()).toEqual(['pause', 'stop']);
  }, 90_000);

  it('the stop tier from online without RCON: stopped first, then its files archived', async () => {
    const id = await create('online-stop', 'os');
    await stack.waitState(id, 'online', 30_000);
    await stack.waitState(id, 'stopped', 30_000);
    await until(
      'the backup after the stop is in the history',
      async () => (await stack.history(id)).some((h) => /backup .* written after the stop/.test(String(h.reason))) || undefined,
      10_000,
    );
    expect(await states(id)).not.toContain('error');
    expect(await backups(id)).toHaveLength(1);
  }, 90_000);

  it('a failing pre-stop backup with onFailure abort_stop (the default) keeps the world running and says why', async () => {
    const id = await create('broken', 'br', RCON);
    await stack.waitState(id, 'online', 30_000);
    const aborted = await until(
      'the aborted stop',
      async () => (await stack.history(id)).find((h) => /stop aborted: the backup failed/.test(String(h.reason))),
      30_000,
    );
    expect(aborted.reason).toMatch(/abort_stop/);
    const now = await stack.waitState(id, 'online', 15_000);
    expect(now.activeAction).toBeNull();
    expect(await states(id)).not.toContain('error');
  }, 90_000);

  it('an aborted online-save stop of a paused world puts it back to its warm sleep', async () => {
    const id = await create('broken-paused', 'bp', RCON);
    await stack.waitState(id, 'online', 30_000);
    await until(
      'paused again after the aborted stop',
      async () => (await stack.history(id)).some((h) => /paused again after the aborted stop/.test(String(h.reason))) || undefined,
      30_000,
    ).catch(async (err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify((await stack.history(id)).map((h) => [h.to, h.reason]))}`);
    });
    const now = await stack.get(id);
    expect(now).toMatchObject({ state: 'paused', activeAction: null });
    expect(await states(id)).not.toContain('error');
  }, 90_000);

  it('a failing pre-stop backup with onFailure stop_without_backup stops the world without one', async () => {
    const id = await create('broken-go-on', 'bg', RCON);
    await stack.waitState(id, 'online', 30_000);
    await stack.waitState(id, 'stopped', 30_000);
    // Without online save the world stops first; the failed archive and the policy come right after.
    await until(
      'the policy in the history',
      async () => (await stack.history(id)).some((h) => /policy stop_without_backup/.test(String(h.reason))) || undefined,
      15_000,
    );
    expect(await stack.get(id)).toMatchObject({ state: 'stopped', activeAction: null });
    expect(await states(id)).not.toContain('error');
    expect(await backups(id)).toHaveLength(0);
  }, 90_000);

  it("a world nobody configured sleeps by the system's tiers; idleTiers [] keeps one awake; the fleet view says which", async () => {
    const sleeper = await create('plain', 'pl');
    const awake = await create('awake', 'aw');
    await stack.waitState(awake, 'online', 30_000);
    const fleet = async (group: string, id: string): Promise<Loose> =>
      ((await stack.must('GET', `/groups/${group}/fleet`)).instances as Loose[]).find((i) => i.id === id)!;
    await stack.waitState(sleeper, 'online', 30_000);
    const due = await until('the sleeper has a countdown', async () => (await fleet('plain', sleeper)).next ?? undefined, 5000);
    expect(due).toMatchObject({ action: 'pause', tier: '2s' });
    expect(await fleet('plain', sleeper)).toMatchObject({ idleTiersFrom: 'system', idleTiers: '2s:pause' });
    await stack.waitState(sleeper, 'paused', 15_000);
    // The sleeper came online after the awake world and is paused: the awake one's tier would have fired by now.
    expect((await stack.get(awake)).state).toBe('online');
    expect(await fleet('awake', awake)).toMatchObject({ next: null, idleTiersFrom: 'group', idleTiers: 'off' });
    expect(await stack.must('GET', '/system/idle-tiers')).toMatchObject({
      source: 'configured',
      tiers: [{ after: '2s', action: 'pause' }],
    });
  }, 90_000);
});
