// An egg on the real Docker engine: imported, created (install script in its
// own container writes files, config edit applied before the start), online by
// the done string, a console line over stdin, stopped by `stop` on stdin; a
// failing install script leaves the instance in `error` with its last lines.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Orchestrator } from '../../src/server/orchestrator.js';
import type { TestAgent } from '../support/agent-harness.js';
import { docker, uniqueId } from '../support/docker.js';
import { eggFixtureText } from '../support/eggs.js';
import { pingStatus } from '../support/mc-server.js';
import { startRealAgentStack, type RealAgentStack } from '../support/real-agent-stack.js';
import type { Loose } from '../server/support.js';

const RUN = uniqueId('egg');

let stack: RealAgentStack;
let agent: TestAgent;
let o: Orchestrator;
let call: RealAgentStack['call'];

function eggText(file: string, patch: (egg: Loose) => void = () => undefined): Loose {
  const egg = JSON.parse(eggFixtureText(file));
  patch(egg);
  return egg;
}

async function waitState(id: string, state: string, timeoutMs = 30_000): Promise<Loose> {
  const deadline = Date.now() + timeoutMs;
  let last: Loose;
  for (;;) {
    last = (await call('GET', `/instances/${id}`)).body;
    if (last.state === state) return last;
    if (Date.now() > deadline) throw new Error(`instance ${id} not ${state} after ${timeoutMs} ms: ${last.state} (${last.stateReason})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const history = async (id: string): Promise<string> =>
  ((await call('GET', `/instances/${id}/history?limit=200`)).body.history as Loose[])
    .map((h) => `${h.to ?? ''}: ${h.reason ?? ''}`)
    .join('\n');
const instanceFile = (id: string, rel: string): string => readFileSync(join(agent.runtimeDirectory, 'instances', id, rel), 'utf8');

beforeAll(async () => {
  stack = await startRealAgentStack({
    agentId: `${RUN}-host`,
    env: { ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms', ENDERCLOUD_COMMAND_RETRY_MAX: '500ms' },
  });
  ({ agent, o, call } = stack);
  const imported = await call('POST', '/templates/import-egg', {
    egg: eggText('test-server.v2.json'),
    name: 'egg-srv',
    version: '1',
    memoryMb: 256,
  });
  expect(imported.status).toBe(201);
  const failing = eggText('test-server.v1.json', (e) => {
    e.scripts.installation.script = 'echo fetching the server\necho no such build >&2\nexit 3\n';
  });
  expect((await call('POST', '/templates/import-egg', { egg: failing, name: 'egg-broken', version: '1', memoryMb: 256 })).status).toBe(201);
  expect(
    (
      await call('PUT', '/groups/eggs', {
        kind: 'persistent',
        variants: [
          { id: 'srv', template: { name: 'egg-srv', version: '1' } },
          { id: 'broken', template: { name: 'egg-broken', version: '1' } },
        ],
      })
    ).status,
  ).toBe(201);
});

afterAll(async () => {
  await stack?.close();
});

describe('an egg template on Docker', () => {
  let id = '';

  it('install script wrote files, config edit applied, online by the done string', async () => {
    const res = await call('POST', '/instances', { groupId: 'eggs', variantId: 'srv', name: `${RUN}-srv`, settings: { EULA: true } });
    expect(res.status).toBe(202);
    id = res.body.id as string;
    const online = await waitState(id, 'online', 45_000);
    expect(instanceFile(id, 'installed.txt')).toBe('installed for An egg server\n');
    // The install script wrote server-port=1 and motd=old; the edit before the start set both from the instance.
    expect(instanceFile(id, 'server.properties')).toBe('server-port=25565\nmotd=An egg server\n');
    const h = await history(id);
    expect(h).toMatch(/install script finished in [\d.]+ s, last lines:\ninstall done/);
    const status = await pingStatus('127.0.0.1', online.endpoint.port as number);
    expect(status.motd).toContain('An egg server');
    // No install container is left behind.
    expect(await docker().listContainers({ all: true, filters: { label: [`orchestrator.install=${id}`] } })).toEqual([]);
  });

  it('POST /instances/:id/console writes to stdin when the template has no RCON', async () => {
    const res = await call('POST', `/instances/${id}/console`, { command: 'list' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ via: 'stdin', response: null });
    const deadline = Date.now() + 5000;
    while (!JSON.stringify((await call('GET', `/instances/${id}/logs?tail=50`)).body).includes('console: list') && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    expect(JSON.stringify((await call('GET', `/instances/${id}/logs?tail=50`)).body)).toContain('console: list');
  });

  it('an operator-only egg variable (user_editable: false) is not settable by a narrow token', async () => {
    const token = (await call('POST', '/tokens', { name: `${RUN}-player`, scopes: ['instances:write'] })).body.secret as string;
    const res = await o.app.inject({
      method: 'PATCH',
      url: `/api/v1/instances/${id}/settings`,
      headers: { authorization: `Bearer ${token}` },
      payload: { settings: { MAX_PLAYERS: 30 } },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.message).toMatch(/may not set MAX_PLAYERS: operator-only variable/);
  });

  it('stops gracefully with the stop command written to stdin', async () => {
    expect((await call('POST', `/instances/${id}/stop`, {})).status).toBe(202);
    await waitState(id, 'stopped', 30_000);
    expect(await history(id)).toMatch(/stopped gracefully by the stop command on stdin \(exit code 0\)/);
    const logs = (await call('GET', `/instances/${id}/logs?tail=50`)).body;
    expect(JSON.stringify(logs)).toMatch(/console: stop/);
  });

  it("a failing install script leaves the instance in error with the script's last lines", async () => {
    const res = await call('POST', '/instances', { groupId: 'eggs', variantId: 'broken', name: `${RUN}-broken` });
    expect(res.status).toBe(202);
    const failed = await waitState(res.body.id as string, 'error', 45_000);
    expect(failed.stateReason).toMatch(/^create failed: .*install script exited 3; last lines:\n/);
    // stdout and stderr lines both kept (their order between the two streams is the engine's).
    expect(failed.stateReason).toContain('fetching the server');
    expect(failed.stateReason).toContain('no such build');
  });
});
