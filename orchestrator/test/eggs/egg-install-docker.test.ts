// Install scripts as Wings runs them, on the real Docker engine: a separate
// container of the egg's install image (FROM scratch + static busybox, `bash`
// a wrapper around its ash), as root, the script at /mnt/install/install.sh,
// only the server directory mounted; its output is the instance log while it
// runs; its files end up owned by the server's user; a timeout and a failing
// script leave `error`; reinstall through the route and ectl; EULA refused,
// then accepted, writes eula.txt.

import { lstatSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { ENDERCLOUD_USER } from '../../src/lifecycle/settings.js';
import type { TestAgent } from '../support/agent-harness.js';
import { docker, uniqueId } from '../support/docker.js';
import { ensureImage, type ImageDefinition } from '../support/images.js';
import { mcServerImageTag } from '../support/mc-server.js';
import { startRealAgentStack, waitFor, type RealAgentStack } from '../support/real-agent-stack.js';
import type { Loose } from '../server/support.js';

const RUN = uniqueId('egg-install');

/** An install image like Pterodactyl's installers: a shell named bash, nothing else. */
const installerImage: ImageDefinition = {
  name: 'egg-installer',
  dockerfile: [
    'FROM scratch',
    'COPY busybox /bin/busybox',
    'RUN ["/bin/busybox", "--install", "-s", "/bin"]',
    'COPY bash /bin/bash',
    'COPY passwd group /etc/',
    'ENV PATH=/bin',
  ].join('\n'),
  files: () => [
    { path: 'busybox', from: '/bin/busybox', mode: 0o755 },
    { path: 'bash', content: '#!/bin/ash\nexec /bin/ash "$@"\n', mode: 0o755 },
    { path: 'passwd', content: 'root:x:0:0:root:/root:/bin/ash\n' },
    { path: 'group', content: 'root:x:0:\n' },
  ],
};

// Needs root (/root, chown), bash-ish syntax ([[ ]], $(( ))), waits for a gate on its first run.
const SCRIPT = [
  '#!/bin/bash',
  'set -e',
  'echo "installer uid=$(id -u)"',
  '[[ "$(id -u)" == "0" ]] && echo "running as root"',
  'mkdir -p /root/cache && echo cached > /root/cache/x',
  'cd /mnt/server',
  'echo "sum=$((2 + 3))"',
  'if [[ "$MODE" == "fail" ]]; then echo "no such build" >&2; exit 4; fi',
  'if [[ "$MODE" == "slow" ]]; then echo "sleeping"; sleep 120; fi',
  'if [[ ! -e installed-once ]]; then echo "waiting for the gate"; while [[ ! -e .gate ]]; do sleep 0.1; done; fi',
  'mkdir -p plugins && echo jar > plugins/a.jar',
  'printf "server-port=1\\nmotd=old\\n" > server.properties',
  'echo run >> install-count',
  'touch installed-once',
  'ln -sf "$OUTSIDE" outside-link',
  'chown -R root:root /mnt',
  'echo install done',
].join('\n');

let stack: RealAgentStack;
let agent: TestAgent;
let call: RealAgentStack['call'];
let url = '';
let outsideDir = '';

function egg(): Loose {
  const base = JSON.parse(
    readFileSync(new URL('../fixtures/eggs/test-server.v2.json', import.meta.url), 'utf8').replaceAll(
      'endercloud-test/mc-server:TAG',
      mcServerImageTag(),
    ),
  ) as Loose;
  base.scripts.installation = { script: SCRIPT.replaceAll('\n', '\r\n'), container: installerImageTag, entrypoint: 'bash' };
  base.variables.push(
    {
      name: 'Mode',
      description: '',
      env_variable: 'MODE',
      default_value: 'ok',
      user_viewable: true,
      user_editable: true,
      rules: 'required|string|in:ok,fail,slow',
      field_type: 'text',
    },
    {
      name: 'Outside',
      description: '',
      env_variable: 'OUTSIDE',
      default_value: '/',
      user_viewable: true,
      user_editable: true,
      rules: 'required|string',
      field_type: 'text',
    },
  );
  return base;
}
let installerImageTag = '';

async function waitState(id: string, state: string, timeoutMs = 45_000): Promise<Loose> {
  return waitFor(
    `instance ${id} ${state}`,
    async () => {
      const i = (await call('GET', `/instances/${id}`)).body;
      if (i.state === 'error' && state !== 'error') throw new Error(`instance ${id} in error: ${i.stateReason}`);
      return i.state === state ? i : undefined;
    },
    timeoutMs,
    100,
  );
}
const history = async (id: string): Promise<string> =>
  ((await call('GET', `/instances/${id}/history?limit=200`)).body.history as Loose[])
    .map((h) => `${h.to ?? ''}: ${h.reason ?? ''}`)
    .join('\n');
const dir = (id: string): string => join(agent.runtimeDirectory, 'instances', id);
const installContainers = async (id: string) => docker().listContainers({ all: true, filters: { label: [`orchestrator.install=${id}`] } });

beforeAll(async () => {
  installerImageTag = await ensureImage(installerImage);
  stack = await startRealAgentStack({
    agentId: `${RUN}-host`,
    env: { ENDERCLOUD_COMMAND_RETRY_INITIAL: '100ms', ENDERCLOUD_COMMAND_RETRY_MAX: '500ms' },
  });
  ({ agent, call } = stack);
  url = await stack.o.app.listen({ host: '127.0.0.1', port: 0 });
  outsideDir = mkdtempSync(join(tmpdir(), `${RUN}-outside-`));
  writeFileSync(join(outsideDir, 'host-file'), 'host\n');
  expect((await call('POST', '/templates/import-egg', { egg: egg(), name: 'egg-inst', version: '1', memoryMb: 256 })).status).toBe(201);
  expect(
    (await call('POST', '/templates/import-egg', { egg: egg(), name: 'egg-inst', version: '2', memoryMb: 256, installTimeoutMs: 3000 }))
      .status,
  ).toBe(201);
  expect(
    (
      await call('PUT', '/groups/inst', {
        kind: 'persistent',
        variants: [
          { id: 'v1', template: { name: 'egg-inst', version: '1' } },
          { id: 'v2', template: { name: 'egg-inst', version: '2' } },
        ],
      })
    ).status,
  ).toBe(201);
}, 180_000);

afterAll(async () => {
  await stack?.close();
  if (outsideDir) rmSync(outsideDir, { recursive: true, force: true });
});

describe('install scripts as Wings runs them', () => {
  let id = '';

  it('a create that would start without the EULA accepted is refused, saying how to accept', async () => {
    const res = await call('POST', '/instances', { groupId: 'inst', variantId: 'v1', name: `${RUN}-refused` });
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('EULA_NOT_ACCEPTED');
    expect(res.body.error.message).toMatch(/set EULA=true .*--accept-eula/);
  });

  it('runs in its own container as root, streams its output into the instance log, then gives the files to the server user', async () => {
    const res = await call('POST', '/instances', {
      groupId: 'inst',
      variantId: 'v1',
      name: `${RUN}-a`,
      start: false,
      settings: { OUTSIDE: join(outsideDir, 'host-file') },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    id = res.body.id as string;
    // While installing, the instance log is the script's output.
    await waitFor(
      'install output in the log',
      async () => {
        const i = (await call('GET', `/instances/${id}`)).body;
        const logs = (await call('GET', `/instances/${id}/logs?tail=50`)).body;
        return i.state === 'installing' && String(logs).includes('waiting for the gate');
      },
      60_000,
      100,
    );
    const [container] = await installContainers(id);
    const info = await docker().getContainer(container!.Id).inspect();
    expect(info.Config.User).toBe('0:0');
    expect(info.Config.Entrypoint).toEqual(['bash']);
    expect(info.Config.Cmd).toEqual(['/mnt/install/install.sh']);
    expect(info.HostConfig.Privileged).toBe(false);
    expect(info.HostConfig.NetworkMode).not.toBe('host');
    expect(info.HostConfig.PidsLimit).toBe(512);
    expect(info.HostConfig.Memory).toBe(1024 * 1024 * 1024);
    expect(info.Mounts.map((m) => m.Destination)).toEqual(['/mnt/server']);
    expect(String((await call('GET', `/instances/${id}/logs?tail=50`)).body)).toMatch(/installer uid=0\nrunning as root\nsum=5/);
    writeFileSync(join(dir(id), '.gate'), '');
    await waitState(id, 'stopped');
    expect(await installContainers(id)).toEqual([]);
    expect(await history(id)).toMatch(/install script finished in [\d.]+ s, last lines:[\s\S]*install done/);
    for (const rel of ['.', 'plugins', 'plugins/a.jar', 'server.properties', 'install-count']) {
      expect(statSync(join(dir(id), rel)).uid, rel).toBe(ENDERCLOUD_USER.uid);
      expect(statSync(join(dir(id), rel)).gid, rel).toBe(ENDERCLOUD_USER.gid);
    }
    // The planted symlink was re-owned itself; what it points to outside was never touched.
    expect(lstatSync(join(dir(id), 'outside-link')).uid).toBe(ENDERCLOUD_USER.uid);
    expect(statSync(join(outsideDir, 'host-file')).uid).toBe(0);
  }, 120_000);

  it('a start without the EULA is refused; accepted, eula.txt says eula=true', async () => {
    const refused = await call('POST', `/instances/${id}/start`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toMatch(/Minecraft EULA .*EULA=true/);
    expect((await call('PATCH', `/instances/${id}/settings`, { settings: { EULA: true } })).status).toBeLessThan(300);
    await waitFor('no action in flight', async () => (await call('GET', `/instances/${id}`)).body.activeAction === null, 30_000, 100);
    const started = await call('POST', `/instances/${id}/start`);
    expect(started.status, JSON.stringify(started.body)).toBe(202);
    await waitState(id, 'online', 60_000);
    expect(readFileSync(join(dir(id), 'eula.txt'), 'utf8')).toBe('eula=true\n');
  }, 120_000);

  it('reinstall through the route stops the running server, runs the script again and starts it again', async () => {
    const res = await call('POST', `/instances/${id}/reinstall`);
    expect(res.status, JSON.stringify(res.body)).toBe(202);
    expect(res.body.state).toBe('stopping');
    await waitFor('reinstalled', async () => /reinstalled by/.test(await history(id)), 60_000, 100);
    await waitState(id, 'online', 60_000);
    expect(readFileSync(join(dir(id), 'install-count'), 'utf8')).toBe('run\nrun\n');
    expect(statSync(join(dir(id), 'install-count')).uid).toBe(ENDERCLOUD_USER.uid);
  }, 150_000);

  it('ectl instances reinstall NAME --wait, from stopped: stays stopped', async () => {
    expect((await call('POST', `/instances/${id}/stop`)).status).toBe(202);
    await waitState(id, 'stopped');
    await waitFor('no action in flight', async () => (await call('GET', `/instances/${id}`)).body.activeAction === null, 30_000, 100);
    const output = bufferOutput();
    const base = mkdtempSync(join(tmpdir(), `${RUN}-ectl-`));
    try {
      const code = await runCli(['instances', 'reinstall', `${RUN}-a`, '--wait'], {
        output,
        version: 'test',
        env: { configPath: join(base, 'config.json'), urlOverride: url, tokenOverride: stack.adminToken },
      });
      expect(code, output.stderr).toBe(0);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
    expect(output.stdout).toMatch(/reinstall of .* done \(instance stopped\)/);
    expect(readFileSync(join(dir(id), 'install-count'), 'utf8')).toBe('run\nrun\nrun\n');
  }, 120_000);

  it('a failing script leaves error with its last lines; a script past its time limit is killed and leaves error', async () => {
    const failing = await call('POST', '/instances', {
      groupId: 'inst',
      variantId: 'v1',
      name: `${RUN}-fail`,
      settings: { MODE: 'fail', EULA: true },
    });
    const slow = await call('POST', '/instances', {
      groupId: 'inst',
      variantId: 'v2',
      name: `${RUN}-slow`,
      settings: { MODE: 'slow', EULA: true },
    });
    expect([failing.status, slow.status]).toEqual([202, 202]);
    const failed = await waitState(failing.body.id as string, 'error', 60_000);
    expect(failed.stateReason).toMatch(/^create failed: .*install script exited 4; last lines:\n/);
    expect(failed.stateReason).toContain('no such build');
    const timedOut = await waitState(slow.body.id as string, 'error', 60_000);
    expect(timedOut.stateReason).toMatch(/install script did not finish within 3000 ms and was killed; last lines:\n[\s\S]*sleeping/);
    expect(await installContainers(failing.body.id as string)).toEqual([]);
    expect(await installContainers(slow.body.id as string)).toEqual([]);
  }, 120_000);

  it('reinstall is refused in a state it does not run from, naming the states it does', async () => {
    const busy = await call('POST', '/instances', { groupId: 'inst', variantId: 'v1', name: `${RUN}-b`, start: false });
    const res = await call('POST', `/instances/${busy.body.id as string}/reinstall`);
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(
      /cannot reinstall instance .* while it is installing \(allowed from: stopped, error, online, degraded\)/,
    );
    // Its first install waits for the gate: let it finish, so nothing is in flight at the end.
    await waitFor('its install directory', async () => (await installContainers(busy.body.id as string)).length > 0, 30_000, 100);
    writeFileSync(join(dir(busy.body.id as string), '.gate'), '');
    await waitState(busy.body.id as string, 'stopped');
  }, 60_000);
});
