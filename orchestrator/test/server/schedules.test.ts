// Schedules through the HTTP layer over a real store and an in-test agent
// (memory runtime, simulated RCON console), with a manual clock: a schedule
// with a command task and a power task runs at its due minute with its offsets,
// run now, onlyWhenOnline skips, a failure stops the chain unless continueOnFailure;
// a kill task ends the stop in progress, or stops a running server with SIGKILL.

import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator, type Loose } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

async function setup() {
  const waits: number[] = [];
  const clockRef: { current?: { advance(ms: number): void } } = {};
  const t = await testOrchestrator({
    deps: {
      generateSecret: () => 'rcon-secret-value-0123456789',
      runSchedules: false,
      scheduleWait: async (ms) => {
        waits.push(ms);
        clockRef.current?.advance(ms);
      },
    },
  });
  clockRef.current = t.clock;
  cleanups.push(() => t.close());
  const a = await startFakeAgent();
  cleanups.push(() => a.close());
  expect((await t.call('POST', '/api/v1/agents/host-a/heartbeat', { body: heartbeatBody(a.url), token: AGENT_TOKEN })).status).toBe(200);
  await t.o.ctx.hosts.whenIdle();
  await t.call('PUT', '/api/v1/templates/mc/versions/1', {
    body: {
      image: 'mc:1',
      resources: { memoryMb: 256 },
      variables: [{ name: 'RCON_PASSWORD', type: 'string', secret: true }],
      readiness: { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 5000, intervalMs: 100 },
      stop: { signal: 'SIGTERM', timeoutMs: 3000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
    },
  });
  await t.call('PUT', '/api/v1/groups/g', {
    body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] },
  });
  const created = await t.call('POST', '/api/v1/instances', { body: { groupId: 'g', variantId: 'v', name: 'survival' } });
  const id = created.body.id as string;
  const work = async () => {
    for (let i = 0; i < 20; i++) {
      const claimed = await t.o.worker.tick();
      await t.o.worker.whenIdle();
      if (claimed.length === 0) return;
    }
  };
  await work();
  await t.o.supervisor.probeOnce(id);
  const get = async (): Promise<Loose> => (await t.call('GET', `/api/v1/instances/${id}`)).body;
  expect((await get()).state).toBe('online');
  const consoleLog = () => [...a.runtime.containers.values()].flatMap((c) => c.consoleLog);
  return { t, a, id, work, get, waits, consoleLog };
}

const cmd = (payload: string, over: Record<string, unknown> = {}) => ({
  action: 'command',
  payload,
  offsetSeconds: 0,
  continueOnFailure: false,
  ...over,
});

describe('schedules', () => {
  it('validate bodies, run at the due minute in order with offsets, record the result, and compute the next run', async () => {
    const s = await setup();
    const base = `/api/v1/instances/${s.id}/schedules`;
    const badCron = await s.t.call('POST', base, {
      body: { name: 'x', cron: '99 * * * *', enabled: true, onlyWhenOnline: true, tasks: [cmd('say hi')] },
    });
    expect(badCron.status).toBe(400);
    expect(badCron.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { field: 'cron' } });
    const badPower = await s.t.call('POST', base, {
      body: {
        name: 'x',
        cron: '0 4 * * *',
        enabled: true,
        onlyWhenOnline: true,
        tasks: [{ action: 'power', payload: 'explode', offsetSeconds: 0, continueOnFailure: false }],
      },
    });
    expect(badPower.body.error.message).toContain('unknown power action');
    expect(
      (await s.t.call('POST', base, { body: { name: 'x', cron: '0 4 * * *', enabled: true, onlyWhenOnline: true, tasks: [] } })).status,
    ).toBe(400);

    s.t.clock.set(Date.UTC(2026, 0, 1, 3, 58, 10));
    const created = await s.t.call('POST', base, {
      body: {
        name: 'nightly',
        cron: '0 4 * * *',
        enabled: true,
        onlyWhenOnline: true,
        tasks: [cmd('say restarting in 60s'), { action: 'power', payload: 'restart', offsetSeconds: 60, continueOnFailure: false }],
      },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'nightly',
      nextRunAt: Date.UTC(2026, 0, 1, 4, 0),
      lastRunAt: null,
      lastResult: null,
      running: false,
    });
    const sid = created.body.id as string;
    expect((await s.t.call('GET', base)).body.schedules.map((x: Loose) => x.id)).toEqual([sid]);

    // Not due yet.
    expect(await s.t.o.ctx.schedules.tick()).toEqual([]);
    s.t.clock.set(Date.UTC(2026, 0, 1, 4, 0, 5));
    expect(await s.t.o.ctx.schedules.tick()).toEqual([sid]);
    await s.t.o.ctx.schedules.idle();
    expect(s.consoleLog()).toContain('say restarting in 60s');
    expect(s.waits).toEqual([60_000]);
    const after = (await s.t.call('GET', `${base}/${sid}`)).body;
    expect(after).toMatchObject({
      lastResult: 'ok',
      lastError: null,
      running: false,
      lastRunAt: Date.UTC(2026, 0, 1, 4, 1, 5),
      nextRunAt: Date.UTC(2026, 0, 2, 4, 0),
    });
    expect((await s.get()).activeAction).toMatchObject({ kind: 'restart' });
    // The restart went through the action pipeline as the schedule's actor.
    await s.work();
    expect(await s.t.o.ctx.schedules.tick()).toEqual([]);

    const audit = (await s.t.call('GET', '/api/v1/audit?action=schedule.create')).body;
    expect(JSON.stringify(audit)).toContain('schedule.create');
  });

  it('run now, onlyWhenOnline skips, a failure stops the chain unless continueOnFailure; delete', async () => {
    const s = await setup();
    const base = `/api/v1/instances/${s.id}/schedules`;
    // `start` on an online instance is a no-op (ok); `pause` is refused by checkSchedule; a console-less failure: stop first, then a command fails.
    const chain = await s.t.call('POST', base, {
      body: {
        name: 'chain',
        cron: '0 4 * * *',
        enabled: false,
        onlyWhenOnline: false,
        tasks: [
          { action: 'power', payload: 'stop', offsetSeconds: 0, continueOnFailure: false },
          { action: 'power', payload: 'restart', offsetSeconds: 1, continueOnFailure: true },
          cmd('say after', { offsetSeconds: 2 }),
        ],
      },
    });
    expect(chain.body.nextRunAt).toBeNull();
    const run = await s.t.call('POST', `${base}/${chain.body.id}/run`);
    expect(run.status).toBe(202);
    await s.t.o.ctx.schedules.idle();
    // stop accepted; restart refused (INSTANCE_BUSY: the stop is in progress) but continues; the command then runs.
    const failed = (await s.t.call('GET', `${base}/${chain.body.id}`)).body;
    expect(failed.lastResult).toBe('failed');
    expect(failed.lastError).toContain('task 2 (power restart)');
    expect(s.consoleLog()).toContain('say after');
    expect(s.waits).toEqual([1000, 2000]);

    const stopAt = await s.t.call('POST', base, {
      body: {
        name: 'stops',
        cron: '0 4 * * *',
        enabled: false,
        onlyWhenOnline: false,
        tasks: [{ action: 'power', payload: 'restart', offsetSeconds: 0, continueOnFailure: false }, cmd('say never')],
      },
    });
    await s.t.call('POST', `${base}/${stopAt.body.id}/run`);
    await s.t.o.ctx.schedules.idle();
    expect((await s.t.call('GET', `${base}/${stopAt.body.id}`)).body).toMatchObject({ lastResult: 'failed' });
    expect(s.consoleLog()).not.toContain('say never');

    await s.work();
    expect((await s.get()).state).toBe('stopped');
    const online = await s.t.call('POST', base, {
      body: { name: 'online only', cron: '* * * * *', enabled: true, onlyWhenOnline: true, tasks: [cmd('say x')] },
    });
    await s.t.call('POST', `${base}/${online.body.id}/run`);
    await s.t.o.ctx.schedules.idle();
    expect((await s.t.call('GET', `${base}/${online.body.id}`)).body).toMatchObject({
      lastResult: 'skipped',
      lastError: expect.stringContaining('not online'),
    });

    expect((await s.t.call('DELETE', `${base}/${online.body.id}`)).body).toEqual({ id: online.body.id, instanceId: s.id, deleted: true });
    expect((await s.t.call('GET', `${base}/${online.body.id}`)).status).toBe(404);
    expect((await s.t.call('GET', `/api/v1/instances/nope/schedules`)).status).toBe(404);
  });

  it('a kill task ends the stop in progress, and alone is a stop by SIGKILL', async () => {
    const s = await setup();
    const base = `/api/v1/instances/${s.id}/schedules`;
    const ended = await s.t.call('POST', base, {
      body: {
        name: 'stop then kill',
        cron: '0 4 * * *',
        enabled: false,
        onlyWhenOnline: false,
        tasks: [
          { action: 'power', payload: 'stop', offsetSeconds: 0, continueOnFailure: false },
          { action: 'power', payload: 'kill', offsetSeconds: 1, continueOnFailure: false },
        ],
      },
    });
    expect(ended.status).toBe(201);
    await s.t.call('POST', `${base}/${ended.body.id}/run`);
    await s.t.o.ctx.schedules.idle();
    expect((await s.t.call('GET', `${base}/${ended.body.id}`)).body).toMatchObject({ lastResult: 'ok', lastError: null });
    // The kill did not queue behind the stop: the container is gone before the stop command ran.
    expect([...s.a.runtime.containers.values()].map((c) => c.state)).toEqual(['exited']);
    expect((await s.get()).activeAction).toMatchObject({ kind: 'stop' });
    await s.work();
    expect(await s.get()).toMatchObject({ state: 'stopped', activeAction: null });

    // From stopped a kill is a no-op; started again, a lone kill is a stop command whose method is SIGKILL.
    await s.t.call('POST', `/api/v1/instances/${s.id}/start`);
    await s.work();
    await s.t.o.supervisor.probeOnce(s.id);
    expect((await s.get()).state).toBe('online');
    const alone = await s.t.call('POST', base, {
      body: {
        name: 'kill',
        cron: '0 4 * * *',
        enabled: false,
        onlyWhenOnline: false,
        tasks: [{ action: 'power', payload: 'kill', offsetSeconds: 0, continueOnFailure: false }],
      },
    });
    await s.t.call('POST', `${base}/${alone.body.id}/run`);
    await s.t.o.ctx.schedules.idle();
    expect((await s.t.call('GET', `${base}/${alone.body.id}`)).body).toMatchObject({ lastResult: 'ok' });
    expect((await s.get()).activeAction).toMatchObject({ kind: 'stop' });
    await s.work();
    const stopped = await s.get();
    expect(stopped.state).toBe('stopped');
    expect(stopped.stateReason).toBe('killed on request (exit code 137) (schedule kill)');
  });
});
