// Entry point of the `agent` command: parse the configuration, build the
// objects, listen, send heartbeats, and shut down cleanly on SIGTERM/SIGINT.

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { loadOrExit } from '../shared/config.js';
import { packageVersion } from '../shared/package-version.js';
import { createLogger } from '../shared/logger.js';
import { buildAgentApp } from './app.js';
import { EPOCH_FILE_NAME, EpochFence } from './epoch-fence.js';
import { inventoryDigest } from './inventory-digest.js';
import { loadAgentConfig, processEnv } from './config.js';
import { resolveAgentAuth } from './enrolment.js';
import { DockerRuntime } from './docker-runtime.js';
import { Heartbeater, readResources } from './heartbeat.js';
import { realTimers } from '../shared/timers.js';
import { InstanceService } from './instance-service.js';
import { FsLayerCache, HttpLayerSource } from './layer-cache.js';
import { PortAllocator } from './port-allocator.js';
import { FsRuntimeDirectories } from './runtime-directories.js';
import { exitOnSignals } from '../shared/shutdown.js';

async function main(): Promise<void> {
  const config = loadOrExit(() => loadAgentConfig(processEnv()), 'agent');
  const logger = createLogger('agent', config.logLevel);
  const version = packageVersion();

  await mkdir(config.runtimeDirectory, { recursive: true });
  await mkdir(config.cacheDirectory, { recursive: true });

  // Before anything listens or beats: this host's own credentials (saved, or enrolled now with AGENT_JOIN_TOKEN),
  // else the legacy shared AGENT_TOKEN. Refuses to start beyond loopback without any credential.
  const auth = await resolveAgentAuth({
    agentId: config.agentId,
    orchestratorUrl: config.orchestratorUrl,
    controlUrl: config.controlUrl,
    listenAddress: config.listenAddress,
    runtimeDirectory: config.runtimeDirectory,
    joinToken: config.joinToken,
    token: config.token,
    facts: async () => ({
      controlUrl: config.controlUrl,
      gameAddress: config.gameAddress,
      version,
      resources: await readResources(config.runtimeDirectory),
      portRange: { ...config.portRange },
      heartbeatIntervalMs: config.heartbeatIntervalMs,
    }),
    fetch: globalThis.fetch,
    logger,
  });
  // Towards the orchestrator (heartbeats, layers) and the one bearer this agent's API accepts.
  const outgoing = auth.mode === 'enrolled' ? auth.credentials.hostCredential : auth.mode === 'shared' ? auth.token : undefined;
  const incoming = auth.mode === 'enrolled' ? auth.credentials.callCredential : auth.mode === 'shared' ? auth.token : undefined;
  if (auth.mode === 'none')
    logger.warn('no credential: the agent API accepts any caller on loopback (dev only; enrol it with AGENT_JOIN_TOKEN)');
  if (auth.mode === 'enrolled' && config.token !== undefined)
    logger.info('enrolled: the legacy AGENT_TOKEN is ignored (this host uses its own credentials)');

  const runtime = new DockerRuntime({ socketPath: config.dockerSocket, network: config.dockerNetwork });
  const source = new HttpLayerSource({
    orchestratorUrl: config.orchestratorUrl,
    token: outgoing,
    timeoutMs: config.layerDownloadTimeoutMs,
  });
  const layers = new FsLayerCache({
    directory: config.cacheDirectory,
    source,
    maxArchiveBytes: config.maxArchiveBytes,
    maxExtractedBytes: config.maxLayerBytes,
    logger: logger.child({ component: 'layer-cache' }),
  });
  await layers.init();
  const directories = new FsRuntimeDirectories({
    runtimeDirectory: config.runtimeDirectory,
    runtimeHostDirectory: config.runtimeHostDirectory,
  });
  const ports = new PortAllocator({ range: config.portRange, bindAddress: config.gameBindAddress, runtime });
  const service = new InstanceService({
    agentId: config.agentId,
    orchestratorUrl: config.orchestratorUrl,
    gameAddress: config.gameAddress,
    gameBindAddress: config.gameBindAddress,
    timezone: config.timezone,
    defaultStopTimeoutSeconds: Math.ceil(config.stopTimeoutMs / 1000),
    runtime,
    layers,
    directories,
    ports,
    logger,
  });

  const app = buildAgentApp({
    agentId: config.agentId,
    version,
    token: incoming,
    service,
    engineReachable: () =>
      runtime.ping().then(
        () => true,
        () => false,
      ),
    logger,
    // Persisted beside the instance directories: a restarted agent still refuses an old leader.
    fence: await EpochFence.open(path.join(config.runtimeDirectory, EPOCH_FILE_NAME)),
  });

  const heartbeater = new Heartbeater({
    orchestratorUrl: config.orchestratorUrl,
    agentId: config.agentId,
    token: outgoing,
    intervalMs: config.heartbeatIntervalMs,
    body: async () => ({
      controlUrl: config.controlUrl,
      gameAddress: config.gameAddress,
      version,
      resources: await readResources(config.runtimeDirectory),
      portRange: { ...config.portRange },
      heartbeatIntervalMs: config.heartbeatIntervalMs,
      // Unchanged digest: the orchestrator skips re-reading the inventory. Without one (engine down) it reads.
      ...(await service.inventory().then(
        (inv) => ({ inventoryDigest: inventoryDigest(inv) }),
        () => ({}),
      )),
    }),
    fetch: globalThis.fetch,
    timers: realTimers,
    now: () => Date.now(),
    logger: logger.child({ component: 'heartbeat' }),
  });

  // Managed containers keep running: the agent's absence never stops a game.
  exitOnSignals(logger, 'agent', async () => {
    await heartbeater.stop();
    await app.close();
    logger.info('agent stopped');
  });

  await app.listen({ host: config.listenAddress, port: config.port });
  logger.info(
    { agentId: config.agentId, listen: `${config.listenAddress}:${config.port}`, portRange: config.portRange, version },
    'agent listening',
  );
  heartbeater.start();
}

main().catch((err: unknown) => {
  process.stderr.write(`agent: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
