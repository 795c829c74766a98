// A sink backend in its own process (child of `npm run bench:router`), so that
// its sockets and CPU are not the load generator's: counts bytes (`count`),
// sends every byte back (`echo`), or — `source <bytes>` — answers the first
// bytes of each connection (the login) with `<bytes>` bytes in 64 KiB writes,
// backpressure respected, then ends (the download direction).
// Prints nothing; talks to the parent over IPC: first `{port}`, then one
// `{received, accepted, open}` answer per `stats` message. Exits when the
// parent goes away.

import { createServer, type Socket } from 'node:net';

const mode = process.argv[2];
const sourceBytes = Number(process.argv[3] ?? 0);
let received = 0;
let accepted = 0;
const sockets = new Set<Socket>();
const chunk = Buffer.alloc(64 * 1024, 9);

/** Writes `bytes` to `s` with backpressure, then ends it. */
function send(s: Socket, bytes: number): void {
  let left = bytes;
  const more = (): void => {
    while (left > 0 && !s.destroyed) {
      const n = Math.min(left, chunk.length);
      left -= n;
      if (!s.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void s.once('drain', more);
    }
    s.end();
  };
  more();
}

const server = createServer({ noDelay: true }, (s) => {
  accepted += 1;
  sockets.add(s);
  let started = false;
  s.on('data', (b: Buffer) => {
    received += b.length;
    if (mode === 'echo') s.write(b);
    else if (mode === 'source' && !started) {
      started = true;
      send(s, sourceBytes);
    }
  });
  s.on('error', () => undefined);
  s.on('close', () => sockets.delete(s));
});
server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, () => {
  process.send?.({ port: (server.address() as { port: number }).port });
});
process.on('message', (m: unknown) => {
  if (m === 'stats') process.send?.({ received, accepted, open: sockets.size });
});
process.on('disconnect', () => process.exit(0));
