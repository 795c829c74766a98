// A real local registry (Debian's docker-registry) on 127.0.0.1, for pull
// tests. Docker trusts 127.0.0.0/8 registries over plain HTTP by default.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface LocalRegistry {
  /** host:port, e.g. 127.0.0.1:41234 */
  address: string;
  stop(): Promise<void>;
}

/**
 * The kernel's ephemeral range (net.ipv4.ip_local_port_range): ports it hands
 * out for `listen(0)` and for every outgoing connection's source port.
 */
function ephemeralRange(): { first: number; last: number } {
  try {
    const [first, last] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (first && last) return { first, last };
  } catch {
    // not Linux: fall through to Linux's default
  }
  return { first: 32768, last: 60999 };
}

/** Ports above the ephemeral range, split into one slice per vitest worker (maxForks 2; 4 slices leave room). */
const OWN_FIRST = ephemeralRange().last + 1;
const OWN_SLICES = 4;
const OWN_SLICE_SIZE = Math.floor((65536 - OWN_FIRST) / OWN_SLICES);
const OWN_SLICE_FIRST = OWN_FIRST + ((Number(process.env.VITEST_POOL_ID ?? '1') - 1) % OWN_SLICES) * OWN_SLICE_SIZE;
let ownNext = Math.floor(Math.random() * OWN_SLICE_SIZE);

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/**
 * A port for something that binds it later (a child process, a registry, a
 * published container port). It comes from above the kernel's ephemeral
 * range, from this worker's own slice: a port the kernel picked for
 * `listen(0)` could be handed out again as an outgoing connection's source
 * port before the child binds it (a CI run on a loaded machine failed with
 * `listen EADDRINUSE 127.0.0.1:41851` that way). Where the code under test
 * can listen on port 0 and tell its port, prefer that.
 */
export async function freePort(): Promise<number> {
  if (OWN_SLICE_SIZE >= 16) {
    for (let tries = 0; tries < OWN_SLICE_SIZE; tries++) {
      const port = OWN_SLICE_FIRST + (ownNext++ % OWN_SLICE_SIZE);
      if (await bindable(port)) return port;
    }
  }
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

export async function startRegistry(): Promise<LocalRegistry> {
  const dir = mkdtempSync(join(tmpdir(), 'ec-registry-'));
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'version: 0.1',
      'log:',
      '  level: error',
      'storage:',
      '  filesystem:',
      `    rootdirectory: ${join(dir, 'data')}`,
      '  delete:',
      '    enabled: true',
      'http:',
      `  addr: ${address}`,
    ].join('\n'),
  );
  const child: ChildProcess = spawn('docker-registry', ['serve', config], { stdio: 'ignore' });
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const res = await fetch(`http://${address}/v2/`);
      if (res.ok) break;
    } catch {
      /* not up yet */
    }
    if (child.exitCode !== null) throw new Error(`docker-registry exited with ${child.exitCode}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('docker-registry did not answer within 15 s');
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    address,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
