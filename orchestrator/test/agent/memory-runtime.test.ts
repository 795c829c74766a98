// The in-memory runtime test double passes the same ContainerRuntime contract
// as the Docker adapter, plus its simulated console.

import { describe, expect, it } from 'vitest';
import { MemoryRuntime } from '../support/memory-runtime.js';
import { runtimeContract } from './runtime-contract.js';

runtimeContract('MemoryRuntime (test double)', () => ({
  runtime: new MemoryRuntime(),
  image: 'busybox:1',
  command: ['sleep', '3600'],
  dataHostPath: '/nonexistent',
  labels: { 'contract.run': 'memory' },
  hostPorts: [31000, 31001],
  name: (suffix) => `memory-${suffix}`,
}));

describe('MemoryRuntime console', () => {
  it('answers RCON commands and ends the server on `stop`', async () => {
    const runtime = new MemoryRuntime();
    await runtime.ensureImage('mc:1');
    const { id } = await runtime.create({
      name: 'mc',
      image: 'mc:1',
      env: [],
      labels: {},
      dataHostPath: '/x',
      port: { containerPort: 25565, hostPort: 31000, hostIp: '127.0.0.1' },
    });
    await runtime.start(id);
    const address = (await runtime.inspect(id))!.address!;
    const rcon = await runtime.rconConnect({ host: address, port: 25575, password: 'pw', connectTimeoutMs: 100, commandTimeoutMs: 100 });
    expect(await rcon.exec('list')).toBe('ok list');
    await rcon.exec('stop');
    expect(await runtime.inspect(id)).toMatchObject({ state: 'exited', exitCode: 0 });
    await expect(
      runtime.rconConnect({ host: address, port: 25575, password: 'pw', connectTimeoutMs: 100, commandTimeoutMs: 100 }),
    ).rejects.toMatchObject({ code: 'UPSTREAM_FAILED' });
  });
});
