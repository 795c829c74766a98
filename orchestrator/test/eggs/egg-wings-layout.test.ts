// An egg in Wings' runtime layout on the real Docker engine, through the real
// agent and orchestrator: a Paper-shaped egg (test/fixtures/eggs/paper-yolks.v2.json)
// on the yolks-shaped image (test-images/yolks), whose own entrypoint reads
// STARTUP, fills {{VAR}} from the environment and runs the line (bash syntax)
// in /home/container. The image is chosen per instance from the egg's
// docker_images ('Java 17') and changed later by an update ('Java 21').

import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestAgent } from '../support/agent-harness.js';
import { docker, uniqueId } from '../support/docker.js';
import { eggFixtureText } from '../support/eggs.js';
import { pingStatus } from '../support/mc-server.js';
import { startRealAgentStack, waitFor, type RealAgentStack } from '../support/real-agent-stack.js';
import { YOLKS_JAVA17_ALIAS, yolksImageTag } from '../../test-images/yolks/image.js';
import type { Loose } from '../server/support.js';
import { ENDERCLOUD_USER } from '../../src/lifecycle/settings.js';

const RUN = uniqueId('wings');

let stack: RealAgentStack;
let agent: TestAgent;
let call: RealAgentStack['call'];
const egg = JSON.parse(eggFixtureText('paper-yolks.v2.json')) as Loose;

const waitState = (id: string, state: string, timeoutMs = 45_000): Promise<Loose> =>
  waitFor(
    `instance ${id} ${state}`,
    async () => {
      const i = (await call('GET', `/instances/${id}`)).body;
      if (i.state === 'error') throw new Error(`instance ${id} in error: ${i.stateReason}`);
      return i.state === state ? i : undefined;
    },
    timeoutMs,
    100,
  );

const instanceFile = (id: string, rel: string): string => readFileSync(join(agent.runtimeDirectory, 'instances', id, rel), 'utf8');

async function containerOf(id: string): Promise<Loose> {
  const [c] = await docker().listContainers({
    all: true,
    filters: { label: [`orchestrator.instance=${id}`, 'orchestrator.managed=true'] },
  });
  if (!c) throw new Error(`no container for ${id}`);
  return (await docker().getContainer(c.Id).inspect()) as unknown as Loose;
}

const envOf = (c: Loose): Record<string, string> =>
  Object.fromEntries((c.Config.Env as string[]).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));

beforeAll(async () => {
  stack = await startRealAgentStack({
    agentId: `${RUN}-host`,
    env: { ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms', ENDERCLOUD_COMMAND_RETRY_MAX: '500ms' },
  });
  ({ agent, call } = stack);
  const imported = await call('POST', '/templates/import-egg', { egg, name: 'paper-yolks', version: '1', memoryMb: 256 });
  expect(imported.status, JSON.stringify(imported.body)).toBe(201);
  expect(
    (await call('PUT', '/groups/paper', { kind: 'persistent', variants: [{ id: 'srv', template: { name: 'paper-yolks', version: '1' } }] }))
      .status,
  ).toBe(201);
});

afterAll(async () => {
  await stack?.close();
});

describe("an egg in Wings' layout on Docker", () => {
  let id = '';

  it('refuses an image choice the egg does not offer, naming the choices', async () => {
    const res = await call('POST', '/instances', {
      groupId: 'paper',
      variantId: 'srv',
      name: `${RUN}-bad`,
      image: 'Java 8',
      settings: { EULA: 'true' },
    });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toBe(
      `body/image "Java 8" is not one of this template's image choices: Java 21 (${yolksImageTag()}), Java 17 (${YOLKS_JAVA17_ALIAS})`,
    );
  });

  it('the preview shows the chosen image, the choices and the server directory', async () => {
    const res = await call('POST', '/instances/preview', { groupId: 'paper', variantId: 'srv', image: 'Java 17' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({
      image: YOLKS_JAVA17_ALIAS,
      imageChoices: { 'Java 21': yolksImageTag(), 'Java 17': YOLKS_JAVA17_ALIAS },
      startup: egg.startup,
      serverDirectory: '/home/container',
    });
  });

  it("runs the image's entrypoint with STARTUP in /home/container, Wings' env, the published address in server.properties, and answers a status ping", async () => {
    // The egg has the eula feature: without the operator's acceptance nothing is created or started.
    const refused = await call('POST', '/instances', { groupId: 'paper', variantId: 'srv', name: `${RUN}-srv`, image: 'Java 17' });
    expect(refused.status, JSON.stringify(refused.body)).toBe(409);
    expect(refused.body.error.code).toBe('EULA_NOT_ACCEPTED');
    const res = await call('POST', '/instances', {
      groupId: 'paper',
      variantId: 'srv',
      name: `${RUN}-srv`,
      image: 'Java 17',
      settings: { EULA: 'true' },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    id = res.body.id as string;
    const online = await waitState(id, 'online');

    const c = await containerOf(id);
    expect(c.Config.Image).toBe(YOLKS_JAVA17_ALIAS);
    expect(c.Config.WorkingDir).toBe('/home/container');
    // The image's own entrypoint and no command: nothing overridden.
    expect(c.Config.Entrypoint).toEqual(['/bin/sh', '/entrypoint.sh']);
    expect(c.Config.Cmd ?? null).toBeNull();
    expect((c.Mounts as Loose[]).map((m) => m.Destination)).toEqual(['/home/container']);
    const env = envOf(c);
    expect(env).toMatchObject({
      // The dotted references rewritten to the variables the entrypoint fills; the rest as the egg wrote it.
      STARTUP: (egg.startup as string).replace(
        '{{server.build.default.ip}}:{{server.build.default.port}}',
        '{{SERVER_IP}}:{{SERVER_PORT}}',
      ),
      SERVER_MEMORY: '256',
      SERVER_PORT: '25565',
      SERVER_IP: '127.0.0.1',
      P_SERVER_UUID: id,
      P_SERVER_LOCATION: stack.agentId,
      TZ: 'UTC',
      SERVER_JARFILE: 'server.jar',
      MOTD: 'A Paper egg; on yolks',
    });

    // The install script wrote server-ip=old and server-port=1; the edit before the start set the published address and the port.
    expect(instanceFile(id, 'server.properties')).toBe(
      'server-ip=127.0.0.1\nserver-port=25565\nmotd=A Paper egg; on yolks\nquery.port=25565\n',
    );
    // The install script ran as root (its [[ … ]] root check passed) and chowned to root; the files are the server user's afterwards.
    expect(instanceFile(id, 'eula.txt')).toMatch(/^eula=true\n?$/m);
    for (const rel of ['server.jar', 'server.properties', 'eula.txt']) {
      expect(statSync(join(agent.runtimeDirectory, 'instances', id, rel)).uid, rel).toBe(ENDERCLOUD_USER.uid);
    }
    const history = JSON.stringify((await call('GET', `/instances/${id}/history`)).body);
    expect(history).toContain('install done as uid 0');
    // The line ran in /home/container with the variables filled in (the [[ … ]] test saw the jar the install wrote).
    const logs = JSON.stringify((await call('GET', `/instances/${id}/logs?tail=200`)).body);
    expect(logs).toContain('starting server.jar with -Xmx256M in /home/container, on 127.0.0.1:25565');
    const status = await pingStatus('127.0.0.1', online.endpoint.port as number);
    expect(status.motd).toContain('A Paper egg; on yolks');
  });

  it("an update changes the image to another of the egg's choices, by its label", async () => {
    const res = await call('POST', `/instances/${id}/update`, { image: 'Java 21', confirm: true });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    await waitFor(
      'the update to finish',
      async () => {
        const i = (await call('GET', `/instances/${id}`)).body;
        return i.state === 'online' && i.activeAction === null && i.image === yolksImageTag() ? i : undefined;
      },
      60_000,
      100,
    );
    const c = await containerOf(id);
    expect(c.Config.Image).toBe(yolksImageTag());
    expect(c.Config.WorkingDir).toBe('/home/container');
    expect(envOf(c).STARTUP).toContain('in $(pwd), on {{SERVER_IP}}:{{SERVER_PORT}}');
  });
});
