import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PortAllocator, bindProbe, chooseFreePort } from '../../src/agent/port-allocator.js';
import { AppError } from '../../src/shared/errors.js';

describe('chooseFreePort', () => {
  it('picks the first port of the range when nothing is used', () => {
    expect(chooseFreePort({ first: 30000, last: 30005 }, new Set())).toBe(30000);
  });

  it('skips used ports', () => {
    expect(chooseFreePort({ first: 30000, last: 30005 }, new Set([30000, 30001, 30003]))).toBe(30002);
  });

  it('ignores used ports outside the range', () => {
    expect(chooseFreePort({ first: 30000, last: 30001 }, new Set([29999, 30002]))).toBe(30000);
  });

  it('an exhausted range is PORT_RANGE_EXHAUSTED naming the range', () => {
    let err: unknown;
    try {
      chooseFreePort({ first: 30000, last: 30001 }, new Set([30000, 30001]));
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('PORT_RANGE_EXHAUSTED');
    expect((err as AppError).message).toContain('30000-30001');
  });
});

describe('PortAllocator', () => {
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
  });

  it('skips ports the runtime reports and ports the probe finds busy', async () => {
    const probed: number[] = [];
    const allocator = new PortAllocator({
      range: { first: 100, last: 110 },
      bindAddress: '127.0.0.1',
      runtime: { reservedHostPorts: async () => new Set([100, 101]) },
      probe: async (_addr, port) => {
        probed.push(port);
        return port !== 102;
      },
    });
    expect(await allocator.allocate()).toBe(103);
    expect(probed).toEqual([102, 103]);
  });

  it('treats caller-reserved ports as used', async () => {
    const allocator = new PortAllocator({
      range: { first: 100, last: 110 },
      bindAddress: '127.0.0.1',
      runtime: { reservedHostPorts: async () => new Set() },
      probe: async () => true,
    });
    expect(await allocator.allocate(new Set([100]))).toBe(101);
  });

  it('fails with PORT_RANGE_EXHAUSTED when every port is busy on the host', async () => {
    const allocator = new PortAllocator({
      range: { first: 100, last: 102 },
      bindAddress: '127.0.0.1',
      runtime: { reservedHostPorts: async () => new Set([101]) },
      probe: async () => false,
    });
    await expect(allocator.allocate()).rejects.toMatchObject({ code: 'PORT_RANGE_EXHAUSTED', message: expect.stringContaining('100-102') });
  });

  it('the bind probe sees a real host listener', async () => {
    const server = createServer();
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    expect(await bindProbe('127.0.0.1', port)).toBe(false);
    await new Promise((r) => server.close(r));
    servers.pop();
    expect(await bindProbe('127.0.0.1', port)).toBe(true);
  });
});
