// The orchestrator SIGKILLed in the middle of a despawn (real Docker engine,
// a child-process orchestrator, a router and a minecraft-protocol client that
// ignores the evacuation's Transfer packet so the despawn waits): after the
// restart the durable despawn command resumes from its steps and finishes once
// — drained once, archived once, the world kept.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginBot, type Bot } from '../support/mc-server.js';
import { startFleetStack, until, type FleetStack, type Loose } from '../support/fleet-stack.js';
import type { StackRouter } from '../support/router-stack.js';

let stack: FleetStack;
let router: StackRouter;
const bots: Bot[] = [];

const playersOn = async (id: string): Promise<string[]> =>
  (((await stack.api('GET', `/instances/${id}/players`)).body.players as Loose[] | undefined) ?? []).map((p) => p.name as string);

beforeAll(async () => {
  stack = await startFleetStack('fl-rst', { mode: 'process' });
  await stack.putGroup('lobby', null, { kind: 'persistent' });
  await stack.putGroup('rst', { savegame: { mode: 'archive' } });
});

afterAll(async () => {
  for (const b of bots) await b.end().catch(() => undefined);
  await stack?.close();
});

describe('orchestrator killed during a despawn', () => {
  it('the despawn resumes after the restart and finishes once', async () => {
    const lobby = (await stack.must('POST', '/groups/lobby/spawn', { name: `${stack.run}-lobby`, wait: '20s' })).id as string;
    const id = (await stack.must('POST', '/groups/rst/spawn', { name: `${stack.run}-rst`, wait: '20s' })).id as string;
    router = await stack.startRouter(['try = ["g", "lobby"]', '[servers]', 'g = "group:rst"', `lobby = "instance:${lobby}"`].join('\n'));
    await until('router sees it Running', () => router.parts.registry!.get(id)?.status === 'Running', 5000);
    const stayer = await loginBot('127.0.0.1', router.port, 'Stayer', { timeoutMs: 20_000 });
    bots.push(stayer);
    await until('Stayer on the instance', async () => (await playersOn(id)).includes('Stayer'), 10_000, 100);

    expect((await stack.api('POST', `/instances/${id}/despawn`, { timeout: '60s' })).status).toBe(202);
    // Evacuated, but this client does not follow the Transfer: the despawn waits for it to leave.
    await stayer.waitForPacket('transfer', 15_000);
    await until('despawn waiting', async () => (await stack.history(id)).some((h) => h.details?.despawn === 'evacuate'), 10_000, 100);
    await stack.kill();
    await stack.restart();

    // The resumed command evacuates again (the player is still on) and waits; the player leaves now.
    await until(
      'despawn resumed',
      async () => (await stack.history(id)).filter((h) => h.details?.despawn === 'evacuate').length >= 2,
      30_000,
      200,
    );
    expect(stayer.client.ended).toBe(false);
    await stayer.end();
    const archived = await stack.waitState(id, 'archived', 30_000);
    expect(archived.activeAction).toBeNull();
    expect(await stack.containerOf(id)).toBeUndefined();
    expect(existsSync(join(stack.runtimeDir(id), 'level.json'))).toBe(true);

    const history = await stack.history(id);
    const steps = history
      .map((h) => h.details?.despawn)
      .filter(Boolean)
      .reverse();
    expect(steps.filter((s) => s === 'drain')).toHaveLength(1);
    expect(steps.filter((s) => s === 'delete')).toHaveLength(1);
    expect(steps.at(-1)).toBe('delete');
    expect(history.filter((h) => h.to === 'archived')).toHaveLength(1);
    const despawns = (await stack.commands(id)).filter((c) => c.kind === 'despawn');
    expect(despawns).toHaveLength(1);
    expect(despawns[0]).toMatchObject({ status: 'succeeded' });
    // Nothing runs it again: still archived a few provisioner and worker ticks later.
    await new Promise((r) => setTimeout(r, 1500));
    expect((await stack.get(id)).state).toBe('archived');
    expect((await stack.history(id)).length).toBe(history.length);
  });
});
