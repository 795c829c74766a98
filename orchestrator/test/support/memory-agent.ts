// A real agent app over the in-memory runtime (test/support/memory-runtime.ts, a
// labelled test double): route tests of the agent that need no Docker engine.

import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { buildAgentApp } from '../../src/agent/app.js';
import { EPOCH_FILE_NAME, EpochFence } from '../../src/agent/epoch-fence.js';
import { InstanceService } from '../../src/agent/instance-service.js';
import { PortAllocator } from '../../src/agent/port-allocator.js';
import { FsRuntimeDirectories } from '../../src/agent/runtime-directories.js';
import { MemoryRuntime } from './memory-runtime.js';
import { silentLogger } from '../server/support.js';

/** A real agent app (InstanceService, runtime directories, fence) over the in-memory runtime test double. */
export async function memoryAgentApp(base: string, runtimeDirectory: string) {
  const emptyLayer = path.join(base, 'empty-layer');
  await mkdir(emptyLayer, { recursive: true });
  const directories = new FsRuntimeDirectories({ runtimeDirectory, runtimeHostDirectory: runtimeDirectory });
  await directories.init();
  const runtime = new MemoryRuntime({ output: () => 'Done (1.0s)!\n' });
  const service = new InstanceService({
    agentId: 'fence-agent',
    orchestratorUrl: 'http://127.0.0.1:9',
    gameAddress: '127.0.0.1',
    gameBindAddress: '127.0.0.1',
    defaultStopTimeoutSeconds: 1,
    runtime,
    layers: { ensure: async () => emptyLayer },
    directories,
    ports: new PortAllocator({ range: { first: 32000, last: 32010 }, bindAddress: '127.0.0.1', runtime, probe: async () => true }),
    logger: silentLogger,
    rconConnect: runtime.rconConnect,
  });
  const fence = await EpochFence.open(path.join(runtimeDirectory, EPOCH_FILE_NAME));
  const app = buildAgentApp({
    agentId: 'fence-agent',
    version: '0.1.0',
    token: undefined,
    service,
    engineReachable: async () => true,
    logger: silentLogger,
    fence,
  });
  await app.ready();
  return { app, runtime, fence };
}
