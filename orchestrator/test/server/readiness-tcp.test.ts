// Guards the `tcp` readiness probe: Docker's userland proxy accepts on a
// published port with no server behind it, so an accepted connection counts
// only if it stays open; checked against a real published container port.
import { createServer, type Server } from 'node:net';
import { afterAll, describe, expect, it } from 'vitest';
import { tcpConnect } from '../../src/server/lifecycle-engine/readiness-prober.js';
import { docker, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { busyboxImage, imageTag } from '../support/images.js';
import { freePort } from '../support/registry.js';

const RUN = uniqueId('tcp-ready');
const servers: Server[] = [];

async function listen(onConnection: (socket: import('node:net').Socket) => void): Promise<number> {
  const server = createServer(onConnection);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

afterAll(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
  await removeContainersByLabel({ 'endercloud.test': RUN });
});

describe('tcp readiness', () => {
  it('a server that keeps the connection open is ready', async () => {
    const port = await listen(() => undefined);
    await expect(tcpConnect('127.0.0.1', port, 2000)).resolves.toBeUndefined();
  });

  it('a listener that accepts and hangs up at once is not ready', async () => {
    const port = await listen((socket) => socket.end());
    await expect(tcpConnect('127.0.0.1', port, 2000)).rejects.toThrow(/accepted and closed at once/);
  });

  it('a published container port with nothing listening inside is not ready, though Docker accepts the connection', async () => {
    const hostPort = await freePort();
    const container = await docker().createContainer({
      Image: imageTag(busyboxImage),
      Cmd: ['sleep', '30'],
      Labels: { 'endercloud.test': RUN },
      ExposedPorts: { '25565/tcp': {} },
      HostConfig: { AutoRemove: false, PortBindings: { '25565/tcp': [{ HostIp: '127.0.0.1', HostPort: String(hostPort) }] } },
    });
    await container.start();
    await expect(tcpConnect('127.0.0.1', hostPort, 2000)).rejects.toThrow(/accepted and closed at once|ECONNREFUSED|ECONNRESET/);
    await container.remove({ force: true });
  });
});
