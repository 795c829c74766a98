// AgentHostDriver against the REAL agent app (src/agent/app.ts) over the
// in-memory runtime (a test double) on 127.0.0.1: every HostDriver verb and
// capability round-trips through the agent contract, ids and the bearer token
// travel as headers, and failures map to AppError retryable/fatal as before.

import { createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import * as Api from '../../src/contracts/agent-api.js';
import type { CreateInstanceBody } from '../../src/contracts/agent-api.js';
import { AgentHostDriver } from '../../src/server/drivers/agent-driver.js';
import type { DriverHost } from '../../src/server/drivers/host-driver.js';
import { AGENT_TOKEN, errorOf, layerArchive, startFakeAgent, type FakeAgent } from './support.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const LAYER = { id: 'base', checksum: 'a'.repeat(64) };
const BODY: CreateInstanceBody = {
  groupId: 'g',
  variantId: 'v',
  image: 'mc:1',
  layers: [LAYER],
  resources: { memoryMb: 256 },
  env: { EULA: 'TRUE' },
  command: ['java', '-jar', 'server.jar'],
  labels: { team: 'blue' },
};
/** A replace carries everything but the layers (the agent refuses `layers` on a replace: they are materialized once, at create). */
const { layers: _layers, ...REPLACE_BODY } = BODY;

async function agentUp(token?: string): Promise<{ agent: FakeAgent; host: DriverHost; driver: AgentHostDriver }> {
  const agent = await startFakeAgent(token ? { token } : {});
  cleanups.push(() => agent.close());
  const driver = new AgentHostDriver({ token, timeoutMs: 5000, epoch: { epoch: () => 1 } });
  return { agent, host: { id: 'host-a', controlUrl: `${agent.url}/` }, driver };
}

describe('AgentHostDriver over the real agent app', () => {
  it('creates, lists, inspects, reads logs, pauses, resumes, stops and removes an instance', async () => {
    const { agent, host, driver } = await agentUp(AGENT_TOKEN);
    const created = await driver.create(host, 'i-1', BODY, { commandId: 'cmd-1', requestId: 'req-1' });
    expect(created).toMatchObject({
      instanceId: 'i-1',
      containerName: 'endercloud-v-i-1',
      hostPort: 31000,
      endpoint: '127.0.0.1:31000',
      state: 'running',
    });
    const put = agent.calls.find((c) => c.method === 'PUT')!;
    expect(put.headers).toMatchObject({ authorization: `Bearer ${AGENT_TOKEN}`, 'x-command-id': 'cmd-1', 'x-request-id': 'req-1' });
    expect(put.body.command).toEqual(['java', '-jar', 'server.jar']);
    expect(agent.runtime.containers.get(created.containerId)?.command).toEqual(['java', '-jar', 'server.jar']);

    const [entry] = await driver.inventory(host);
    expect(entry).toMatchObject({
      instanceId: 'i-1',
      groupId: 'g',
      variantId: 'v',
      image: 'mc:1',
      labels: { team: 'blue' },
      user: null,
      oomKilled: false,
    });
    expect(await driver.inspect(host, 'i-1')).toMatchObject({ instanceId: 'i-1', state: 'running', createdAt: expect.any(String) });
    expect(await driver.logs(host, 'i-1', { tail: 1, sinceStart: true })).toBe('Done (1.0s)!\n');
    expect(agent.calls.find((c) => c.path.includes('/logs'))!.path).toBe('/instances/i-1/logs?tail=1&since=start');

    expect((await driver.pause(host, 'i-1')).state).toBe('paused');
    expect((await driver.resume(host, 'i-1')).state).toBe('running');
    expect(await driver.stop(host, 'i-1', { timeoutSeconds: 2, rcon: { port: 25575, password: 'pw' } })).toMatchObject({
      state: 'exited',
      method: 'rcon',
      killed: false,
      exitCode: 0,
    });
    expect((await driver.start(host, 'i-1')).state).toBe('running');
    expect(await driver.stop(host, 'i-1', { signal: 'SIGTERM' })).toMatchObject({ method: 'signal', killed: false });

    expect(await driver.remove(host, 'i-1', { keepData: true })).toEqual({
      instanceId: 'i-1',
      scope: 'container',
      containerRemoved: true,
      directoryRemoved: false,
      pathsRemoved: [],
    });
    expect(await driver.inventory(host)).toEqual([]);
  });

  it('honours start: false — the container is created, not running, and a stop of it is a no-op', async () => {
    const { host, driver } = await agentUp();
    expect((await driver.create(host, 'i-2', { ...BODY, start: false })).state).toBe('created');
    expect(await driver.stop(host, 'i-2', {})).toMatchObject({ state: 'created', method: 'none', killed: false });
    expect((await driver.start(host, 'i-2')).state).toBe('running');
  });

  it('replaces on the same port and cleans orphans up, keeping data when asked', async () => {
    const { agent, host, driver } = await agentUp();
    const first = await driver.create(host, 'i-3', BODY);
    const replaced = await driver.replace(host, 'i-3', { ...REPLACE_BODY, image: 'mc:2', start: true, stop: { signal: 'SIGTERM' } });
    expect(replaced).toMatchObject({
      replaced: true,
      previousContainerId: first.containerId,
      hostPort: first.hostPort,
      state: 'running',
      stop: { method: 'signal' },
    });
    expect((await driver.replace(host, 'i-3', { ...REPLACE_BODY, image: 'mc:2', start: true })).replaced).toBe(false);

    agent.inventory.push({ instanceId: 'orphan', groupId: 'g', variantId: 'v' });
    const report = await driver.cleanup(host, { instanceIds: ['orphan', 'ghost'], keepDataFor: ['orphan'] });
    expect(report).toEqual({ removed: ['orphan'], skipped: [], notFound: ['ghost'], dataKept: ['orphan'] });
    expect(agent.calls.find((c) => c.path === '/cleanup')!.body).toEqual({ instanceIds: ['orphan', 'ghost'], keepDataFor: ['orphan'] });
  });

  it('offers backups, image inspection, RCON and data import as capabilities', async () => {
    const { agent, host, driver } = await agentUp();
    await driver.create(host, 'i-4', { ...BODY, start: false });
    const imported = await driver.dataImport.importData(host, 'i-4', 'world', Readable.from(await layerArchive({ 'level.dat': 'x' })));
    expect(imported).toEqual({ path: 'world', entries: 1, sizeBytes: 1 });

    const info = await driver.backups.create(host, 'i-4', { backupId: 'b-1', paths: ['world'] });
    expect(info).toMatchObject({ backupId: 'b-1', paths: ['world'], sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    expect((await driver.backups.list(host, 'i-4')).map((b) => b.backupId)).toEqual(['b-1']);
    expect(await driver.backups.restore(host, 'i-4', 'b-1')).toMatchObject({
      restored: 'b-1',
      safetyBackupId: expect.stringMatching(/^pre-restore-/),
    });
    expect(await driver.backups.delete(host, 'i-4', 'b-1')).toEqual({ deleted: true });
    expect((await driver.backups.deleteAll(host, 'i-4')).deleted).toBe(1); // the safety backup

    expect(await driver.images.inspectImage(host, 'mc:1', { pull: false })).toMatchObject({
      ref: 'mc:1',
      id: expect.stringMatching(/^sha256:/),
      pulled: false,
    });
    expect((await driver.images.inspectImage(host, 'mc:new', { pull: true })).pulled).toBe(true);
    expect((await errorOf(driver.images.inspectImage(host, 'mc:absent', { pull: false }))).code).toBe('IMAGE_NOT_FOUND');

    await driver.start(host, 'i-4');
    expect(await driver.rcon.command(host, 'i-4', { port: 25575, password: 'pw', command: 'list' })).toEqual({ response: 'ok list' });
    expect([...agent.runtime.containers.values()][0]!.consoleLog).toEqual(['list']);
  });

  it("maps failures: fatal 4xx with the agent's code, retryable 5xx, unauthorized, unreachable and silent hosts", async () => {
    const { agent, host, driver } = await agentUp(AGENT_TOKEN);
    const missing = await errorOf(driver.inspect(host, 'nope'));
    expect(missing).toMatchObject({ code: 'INSTANCE_NOT_FOUND', retryable: false, details: { agentStatus: 404 } });
    expect(missing.message).toContain(`agent ${agent.url}/ refused GET /instances/nope:`);

    agent.failNext('PUT /instances', 1, 503, 'DOCKER_ERROR');
    expect(await errorOf(driver.create(host, 'i-5', BODY))).toMatchObject({ code: 'DOCKER_ERROR', retryable: true });
    agent.failNext('POST /instances/pause', 1, 409, 'INSTANCE_BUSY');
    expect(await errorOf(driver.pause(host, 'i-5'))).toMatchObject({ code: 'INSTANCE_BUSY', retryable: true });

    const wrongToken = new AgentHostDriver({ token: 'wrong', timeoutMs: 5000, epoch: { epoch: () => 1 } });
    expect(await errorOf(wrongToken.inventory(host))).toMatchObject({ code: 'UNAUTHORIZED', retryable: false });

    const closed = await agentUp();
    await closed.agent.close();
    expect(await errorOf(driver.inventory(closed.host))).toMatchObject({ code: 'HOST_UNAVAILABLE', retryable: true });

    // Accepts connections and never answers.
    const sockets: Socket[] = [];
    const silent: Server = createServer((socket) => void sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          for (const socket of sockets) socket.destroy();
          silent.close(() => resolve());
        }),
    );
    const slow = new AgentHostDriver({ token: undefined, timeoutMs: 100, epoch: { epoch: () => 1 } });
    const timeout = await errorOf(slow.inventory({ id: 'h', controlUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}` }));
    expect(timeout).toMatchObject({ code: 'TIMEOUT', retryable: true });
    expect(timeout.message).toContain('did not answer GET /instances within 100 ms');
  });

  it('answers every call in the shape the contract declares', async () => {
    const { host, driver } = await agentUp();
    const conforms = (schema: TSchema, value: unknown) => {
      const errors = [...Value.Errors(schema, value)].map((e) => `${e.path} ${e.message}`);
      expect(errors, JSON.stringify(value)).toEqual([]);
    };
    conforms(Api.InstanceEndpoint, await driver.create(host, 'i-7', { ...BODY, start: false }));
    conforms(Api.DataImportResult, await driver.dataImport.importData(host, 'i-7', '', Readable.from(await layerArchive())));
    conforms(Api.InstanceEndpoint, await driver.start(host, 'i-7'));
    conforms(Api.InventoryAnswer, { instances: await driver.inventory(host) });
    conforms(Api.InstanceDetails, await driver.inspect(host, 'i-7'));
    conforms(Api.InstanceEndpoint, await driver.pause(host, 'i-7'));
    conforms(Api.InstanceEndpoint, await driver.resume(host, 'i-7'));
    conforms(Api.RconAnswer, await driver.rcon.command(host, 'i-7', { port: 25575, password: 'pw', command: 'list' }));
    conforms(Api.ImageInfo, await driver.images.inspectImage(host, 'mc:1', { pull: true }));
    conforms(Api.BackupInfo, await driver.backups.create(host, 'i-7', { backupId: 'b-1' }));
    conforms(Api.BackupList, { backups: await driver.backups.list(host, 'i-7') });
    conforms(Api.StopAnswer, await driver.stop(host, 'i-7', {}));
    conforms(Api.RestoreAnswer, await driver.backups.restore(host, 'i-7', 'b-1'));
    conforms(Api.BackupDeleted, await driver.backups.delete(host, 'i-7', 'b-1'));
    conforms(Api.BackupsDeleted, await driver.backups.deleteAll(host, 'i-7'));
    conforms(Api.ReplaceResult, await driver.replace(host, 'i-7', { ...REPLACE_BODY, image: 'mc:2', start: true }));
    conforms(Api.DeleteReport, await driver.remove(host, 'i-7', { paths: ['server.properties'] }));
    conforms(Api.CleanupReport, await driver.cleanup(host, { instanceIds: ['i-7'] }));
    const health = await fetch(`${host.controlUrl}api/v1/health`);
    conforms(Api.HealthAnswer, await health.json());
  });
});
