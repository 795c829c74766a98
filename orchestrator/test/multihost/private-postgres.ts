// A private PostgreSQL cluster for tests that restart the database: initdb +
// pg_ctl on a free port in a temp dir, run as the `postgres` user (initdb
// refuses root). Never the machine's PostgreSQL on 5432, which other tests use.

import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../support/registry.js';

const run = promisify(execFile);

export interface PrivatePostgres {
  url: string;
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
}

function binDir(): string | undefined {
  for (const v of ['17', '16', '15', '14', '13'])
    if (existsSync(`/usr/lib/postgresql/${v}/bin/pg_ctl`)) return `/usr/lib/postgresql/${v}/bin`;
  return undefined;
}

export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = binDir();
  if (!bin) throw new Error('no PostgreSQL server binaries under /usr/lib/postgresql/*/bin (Debian postgresql)');
  const base = mkdtempSync(join(tmpdir(), 'ec-mh-pg-'));
  const data = join(base, 'data');
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  if (asRoot)
    chownSync(
      base,
      Number((await run('id', ['-u', 'postgres'])).stdout.trim()),
      Number((await run('id', ['-g', 'postgres'])).stdout.trim()),
    );
  const pg = (tool: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], { timeout: 60_000 })
      : run(join(bin, tool), args, { timeout: 60_000 });
  await pg('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const options = `-p ${port} -k ${base} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60`;
  const ctl = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async start() {
      await pg('pg_ctl', ['-D', data, '-l', join(base, 'log'), '-o', options, '-w', '-t', '30', 'start']);
    },
    async stop() {
      await pg('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']);
    },
    async close() {
      await ctl.stop().catch(() => undefined);
      rmSync(base, { recursive: true, force: true });
    },
  };
  try {
    await ctl.start();
  } catch (err) {
    await ctl.close();
    throw err;
  }
  return ctl;
}
