// A TCP forwarder that can be cut like a network partition (a labelled
// simulation of the network, not of the database): while cut, bytes in both
// directions are held and new connections are accepted but not forwarded, so
// the far side never answers and nothing is refused; heal() delivers what was
// held. Listens on 127.0.0.1, port 0.

import net from 'node:net';

export interface TcpCut {
  port: number;
  cut(): void;
  heal(): void;
  close(): Promise<void>;
}

export async function startTcpCut(target: { host: string; port: number }): Promise<TcpCut> {
  let isCut = false;
  const flushers = new Set<() => void>();
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    let upstream: net.Socket | undefined;
    const toUpstream: Buffer[] = [];
    const toClient: Buffer[] = [];
    const flush = () => {
      if (isCut) return;
      if (!upstream) {
        upstream = net.connect(target.port, target.host);
        sockets.add(upstream);
        upstream.on('data', (b) => (isCut ? toClient.push(b) : client.write(b)));
        upstream.on('close', () => client.destroy());
        upstream.on('error', () => client.destroy());
      }
      for (const b of toUpstream.splice(0)) upstream.write(b);
      for (const b of toClient.splice(0)) client.write(b);
    };
    flushers.add(flush);
    client.on('data', (b) => {
      toUpstream.push(b);
      flush();
    });
    client.on('close', () => {
      flushers.delete(flush);
      upstream?.destroy();
    });
    client.on('error', () => upstream?.destroy());
    flush();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => {
      isCut = true;
    },
    heal: () => {
      isCut = false;
      for (const f of [...flushers]) f();
    },
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
