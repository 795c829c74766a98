// A sink backend in its own process (child of `npm run bench:router`), so that
// its sockets and CPU are not the load generator's: counts bytes (`count`) or
// sends every byte back (`echo`). Prints nothing; talks to the parent over IPC:
// first `{port}`, then one `{received, accepted, open}` answer per `stats` message.
// Exits when the parent goes away.

import { createServer, type Socket } from 'node:net';

const echo = process.argv[2] === 'echo';
let received = 0;
let accepted = 0;
const sockets = new Set<Socket>();
const server = createServer({ noDelay: true }, (s) => {
  accepted += 1;
  sockets.add(s);
  s.on('data', (b: Buffer) => {
    received += b.length;
    if (echo) s.write(b);
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
