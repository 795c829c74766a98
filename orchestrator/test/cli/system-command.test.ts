// `ectl system` against real orchestrators over HTTP: version, database, node,
// leader and epoch from GET /health, and whether the database answers from
// GET /ready (a PostgreSQL behind a forwarder cut like a partition: exit 1).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { packageVersion } from '../../src/shared/package-version.js';
import { startTcpCut, type TcpCut } from '../support/tcp-cut.js';
import { TEST_SECRET_KEY } from '../server/support.js';
import { freshPostgres } from '../server/support.js';

const ADMIN_TOKEN = `admin-${'s'.repeat(24)}`;
let base: string;
let db: { url: string; drop(): Promise<void> };
const running: Orchestrator[] = [];
const cuts: TcpCut[] = [];

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'ectl-system-'));
  db = await freshPostgres('ec_ectl_system');
});
afterEach(async () => {
  for (const c of cuts) c.heal();
  while (running.length) await running.pop()!.stop();
  while (cuts.length) await cuts.pop()!.close();
});
afterAll(async () => {
  await db?.drop();
  if (base) rmSync(base, { recursive: true, force: true });
});

async function orchestrator(name: string, env: Record<string, string> = {}): Promise<Orchestrator> {
  const o = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: '127.0.0.1:0',
      ENDERCLOUD_DATA_DIR: join(base, name),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN_TOKEN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
      // Replicas of one database share its secret key.
      ENDERCLOUD_SECRET_KEY: TEST_SECRET_KEY,
      ...env,
    }),
  );
  running.push(o);
  return o;
}

async function ectl(o: Orchestrator, args: string[]) {
  const output = bufferOutput();
  const code = await runCli(args, {
    output,
    env: { configPath: join(base, 'config.json'), urlOverride: o.url, tokenOverride: ADMIN_TOKEN },
    version: 'test',
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

describe('ectl system', () => {
  it('prints version, database, node, leader and epoch (SQLite: this node leads, epoch 1), and the same as JSON', async () => {
    const o = await orchestrator('sqlite', { ENDERCLOUD_NODE_ID: 'solo' });
    const r = await ectl(o, ['system']);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n').filter(Boolean)).toEqual([
      `version:  ${packageVersion()}`,
      expect.stringMatching(/^database: sqlite \(answers, \d+ ms\)$/),
      'node:     solo',
      'leader:   solo (this node)',
      'epoch:    1',
    ]);
    const json = JSON.parse((await ectl(o, ['system', '--json'])).stdout);
    expect(json).toMatchObject({
      database: 'sqlite',
      node: 'solo',
      leader: { node: 'solo', epoch: 1, self: true },
      ready: { ready: true },
    });
  });

  it('a standby names the leader; with its database cut it says NOT READY and exits 1', async () => {
    const leader = await orchestrator('pg-a', { ENDERCLOUD_DATABASE_URL: db.url, ENDERCLOUD_NODE_ID: 'node-a' });
    const u = new URL(db.url);
    const cut = await startTcpCut({ host: u.hostname, port: Number(u.port || 5432) });
    cuts.push(cut);
    u.host = `127.0.0.1:${cut.port}`;
    const standby = await orchestrator('pg-b', {
      ENDERCLOUD_DATABASE_URL: u.toString(),
      ENDERCLOUD_NODE_ID: 'node-b',
      ENDERCLOUD_READY_TIMEOUT: '300ms',
    });
    const epoch = leader.leadership.epoch();
    const ok = await ectl(standby, ['system']);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('node:     node-b\nleader:   node-a\n');
    expect(ok.stdout).toContain(`epoch:    ${epoch}\n`);
    cut.cut();
    const down = await ectl(standby, ['system']);
    expect(down.code).toBe(1);
    expect(down.stdout).toContain(
      'database: postgres (NOT READY — DATABASE_UNAVAILABLE: the postgres database did not answer within 300 ms)',
    );
    expect(down.stderr).toContain("the orchestrator's database does not answer");
  });
});
