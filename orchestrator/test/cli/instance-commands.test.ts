// ectl's instance, catalog, token, audit, transfer, import and request commands
// against a real orchestrator (socket, worker, supervisor; SQLite in a temp dir)
// and the in-test agent of test/server/support.ts: --wait reaches online through
// the log readiness check, typed-name confirmation, refusals in one line.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import { scriptedPrompt, type Prompt } from '../../src/cli/prompt.js';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator } from '../../src/server/orchestrator.js';
import { freePort } from '../support/registry.js';
import { heartbeatBody, startFakeAgent, type FakeAgent } from '../server/support.js';

const ADMIN = `admin-${'i'.repeat(24)}`;
let base: string;
let orchestrator: { url: string; stop(): Promise<void> };
let agent: FakeAgent;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function ectl(args: string[], o: { token?: string; prompt?: Prompt; cwd?: string; url?: string } = {}): Promise<Run> {
  const output = bufferOutput();
  const code = await runCli(args, {
    output,
    version: 'test',
    ...(o.prompt ? { prompt: o.prompt } : {}),
    env: {
      configPath: join(base, 'config.json'),
      urlOverride: o.url ?? orchestrator.url,
      tokenOverride: o.token ?? ADMIN,
      ...(o.cwd ? { cwd: o.cwd } : {}),
    },
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

async function json<T>(args: string[], o: { token?: string } = {}): Promise<T> {
  const r = await ectl([...args, '--json'], o);
  expect(r.stderr.split('\n').filter((l) => l.startsWith('error'))).toEqual([]);
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

const api = (method: string, path: string, body?: unknown) =>
  fetch(`${orchestrator.url}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'ectl-inst-'));
  agent = await startFakeAgent();
  orchestrator = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
      ENDERCLOUD_DATA_DIR: join(base, 'data'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
      ENDERCLOUD_COMMAND_POLL_INTERVAL: '50ms',
      ENDERCLOUD_SUPERVISE_INTERVAL: '100ms',
      ENDERCLOUD_COMMAND_RETRY_INITIAL: '10ms',
      ENDERCLOUD_COMMAND_RETRY_MAX: '40ms',
      ENDERCLOUD_COMMAND_MAX_ATTEMPTS: '2',
    }),
  );
  const beat = await fetch(`${orchestrator.url}/api/v1/agents/host-a/heartbeat`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(heartbeatBody(agent.url, { heartbeatIntervalMs: 600_000 })),
  });
  // One heartbeat for the whole file: a long declared interval keeps the host ONLINE (placeable) on a slow machine.
  expect(beat.status).toBe(200);
  expect(
    (
      await api('PUT', '/templates/mc/versions/1', {
        image: 'mc:1',
        resources: { memoryMb: 256 },
        variables: [
          { name: 'MAX_PLAYERS', type: 'integer', default: 10, apply: 'restart_required' },
          { name: 'WELCOME', type: 'string', default: 'x', apply: 'immediate' },
        ],
        // The in-test agent's log says "Done (1.0s)!": readiness passes, the instance goes online.
        readiness: { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 10_000, intervalMs: 100 },
        stop: { signal: 'SIGTERM', timeoutMs: 3000 },
        dataPaths: ['world'],
        technicalPaths: ['logs'],
      })
    ).status,
  ).toBe(201);
  expect(
    (await api('PUT', '/groups/g', { kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] })).status,
  ).toBe(201);
});

afterAll(async () => {
  await orchestrator?.stop();
  await agent?.close();
  rmSync(base, { recursive: true, force: true });
});

describe('ectl instance commands', () => {
  it('create --wait returns once the instance is online (readiness passed); ls has NAME and PLAYERS columns', async () => {
    const r = await ectl(['instances', 'create', '--group', 'g', '--variant', 'v', '--name', 'survival', '--wait', '--timeout', '30']);
    expect(r.stderr).toMatch(/^waiting for instance i-[0-9a-f]+ to be online…\ninstance survival is online\n$/);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^state:\s+online \(readiness probe succeeded/m);
    const table = await ectl(['instances', 'ls']);
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+ID\s+GROUP\s+VARIANT\s+HOST\s+STATE\s+DESIRED\s+PLAYERS\s+ENDPOINT\s+AGE$/);
    expect(table.stdout).toMatch(/^survival\s+i-[0-9a-f]+\s+g\s+v\s+host-a\s+online\s+running\s+-\s+127\.0\.0\.1:\d+/m);
  });

  // The table of docs/cli.md ("Errors and exit codes"), one row per kind of failure.
  it.each([
    ['--help', ['instances', '--help'], 0, /^$/],
    ['an unknown command', ['instances', 'explode'], 2, /unknown command 'explode'/],
    ['an unknown option', ['instances', 'ls', '--colour'], 2, /unknown option '--colour'/],
    ['a missing argument', ['instances', 'get'], 2, /missing required argument 'name'/],
    [
      'a state that does not exist, naming the valid ones',
      ['instances', 'ls', '--state', 'bogus'],
      2,
      /argument 'bogus' is invalid\. Allowed choices are draft, .*\bonline\b.*\bpaused\b.*\bintervention_required\b/,
    ],
    [
      'a transfer status that does not exist',
      ['transfers', 'ls', '--status', 'bogus'],
      2,
      /Allowed choices are pending, consumed, expired, failed/,
    ],
    ['a request status that does not exist', ['requests', 'ls', '--status', 'bogus'], 2, /Allowed choices are pending, approved, rejected/],
    [
      'a backup-failure policy that does not exist',
      ['instances', 'stop', 'survival', '--backup', '--on-backup-failure', 'pray'],
      2,
      /Allowed choices are abort_stop, stop_without_backup, force_stop_after_timeout/,
    ],
    ['a bad flag value', ['instances', 'start', 'survival', '--wait', '--timeout', 'soon'], 2, /--timeout must be a positive integer/],
    [
      'a bad idle tier',
      ['idle-tiers', 'survival', 'set', '10m:explode'],
      2,
      /idle tiers\[0\]\.action: must be one of pause, stop, archive/,
    ],
    ['a confirmation needed with no terminal', ['instances', 'delete', 'survival'], 2, /needs confirmation: pass --confirm survival/],
    [
      'a typed confirmation that does not match',
      ['instances', 'delete', 'survival', '--confirm', 'other'],
      1,
      /does not match the instance name/,
    ],
    ['an API error', ['instances', 'get', 'nope'], 1, /^error: INSTANCE_NOT_FOUND: /],
  ] as const)('exit codes as documented: %s', async (_what, args, code, stderr) => {
    const r = await ectl([...args]);
    expect(r.code).toBe(code);
    expect(r.stderr).toMatch(stderr);
  });

  it('exit codes as documented: an orchestrator that cannot be reached is 1, no orchestrator configured is 2', async () => {
    expect((await ectl(['instances', 'ls'], { url: `http://127.0.0.1:${await freePort()}` })).code).toBe(1);
    const output = bufferOutput();
    expect(
      await runCli(['instances', 'ls'], {
        output,
        version: 'test',
        env: { configPath: join(base, 'none.json'), urlOverride: undefined, tokenOverride: undefined },
      }),
    ).toBe(2);
    expect(output.stderr).toMatch(/no orchestrator configured/);
    expect((await json<{ state: string }>(['instances', 'get', 'survival'])).state).toBe('online');
  });

  it('stop, start, pause, resume and restart --wait each end in the state the action aims for', async () => {
    const state = async (args: string[]) => {
      const r = await ectl([...args, 'survival', '--wait', '--timeout', '30']);
      expect(r.stderr).not.toMatch(/error/);
      expect(r.code).toBe(0);
      return r.stdout.trim();
    };
    expect(await state(['instances', 'stop'])).toBe('instance survival: stopped');
    expect(await state(['instances', 'start'])).toBe('instance survival: online');
    expect(await state(['i', 'pause'])).toBe('instance survival: paused');
    expect(await state(['i', 'resume'])).toBe('instance survival: online');
    expect(await state(['instances', 'restart'])).toBe('instance survival: online');
    const noop = await ectl(['instances', 'start', 'survival', '--wait']);
    expect(noop.stdout).toMatch(/^instance survival: nothing to do \(.+\); state online\n$/);
  });

  it('settings set types values (numbers stay numbers), settings get shows them and the pending ones; history and revisions list', async () => {
    const set = await ectl(['instances', 'settings', 'set', 'survival', 'WELCOME=hello', 'MAX_PLAYERS=20']);
    expect(set.stderr).toBe('');
    expect(set.stdout).toMatch(/pending until a restart: settings\.MAX_PLAYERS\n$/);
    const got = await json<{ settings: Record<string, unknown>; pendingChanges: { key: string; value: unknown }[] }>([
      'instances',
      'settings',
      'get',
      'survival',
    ]);
    expect(got.settings.WELCOME).toBe('hello');
    expect(got.pendingChanges).toContainEqual(expect.objectContaining({ key: 'settings.MAX_PLAYERS', value: 20 }));
    const bad = await ectl(['instances', 'settings', 'set', 'survival', 'MAX_PLAYERS=lots']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: VALIDATION_FAILED: .*\(HTTP 400\)\n$/);
    expect((await ectl(['instances', 'settings', 'set', 'survival'])).code).toBe(2);
    const history = await json<{ to: string }[]>(['instances', 'history', 'survival']);
    expect(history.map((h) => h.to)).toContain('online');
    expect((await ectl(['instances', 'history', 'survival'])).stdout.split('\n')[0]).toMatch(/^AT\s+FROM\s+TO\s+ACTOR\s+REASON$/);
    expect((await json<unknown[]>(['instances', 'revisions', 'survival'])).length).toBeGreaterThan(0);
  });

  it('players, evacuate, maintenance (instance and global) and reset-crash-loop', async () => {
    expect(await json(['instances', 'players', 'survival'])).toMatchObject({ online: 0, players: [] });
    expect((await ectl(['instances', 'evacuate', 'survival', '--to-group', 'g', '--drain', '5'])).stdout).toBe(
      'instance survival: draining; 0 player(s) to transfer, 0 moved now\n',
    );
    expect((await ectl(['instances', 'evacuate', 'survival', '--to-group', 'g', '--to-instance', 'x'])).code).toBe(2);
    expect((await ectl(['instances', 'maintenance', 'survival', '--on', '--message', 'map reset'])).stdout).toBe(
      'instance survival: maintenance on\n',
    );
    expect(await json(['instances', 'get', 'survival'])).toMatchObject({ maintenance: { enabled: true, message: 'map reset' } });
    expect((await ectl(['instances', 'maintenance', 'survival', '--off'])).code).toBe(0);
    expect(await json(['maintenance', '--on', '--message', 'upgrade'])).toMatchObject({ enabled: true, message: 'upgrade' });
    expect((await ectl(['maintenance'])).stdout).toMatch(/^maintenance: on$/m);
    expect(await json(['maintenance', '--off'])).toMatchObject({ enabled: false });
    const reset = await ectl(['instances', 'reset-crash-loop', 'survival']);
    expect(reset.code).toBe(0);
    expect(reset.stdout).toMatch(/^instance survival: crash loop reset/);
  });

  it('delete: refused without --confirm when there is no terminal, refused on a wrong name, asks on a terminal, then --wait until gone', async () => {
    expect(
      (await json<{ id: string }>(['instances', 'create', '--group', 'g', '--variant', 'v', '--name', 'doomed', '--wait'])).id,
    ).toMatch(/^i-/);
    const script = await ectl(['instances', 'delete', 'doomed']);
    expect(script.code).toBe(2);
    expect(script.stderr).toBe(
      'error: deleting doomed (container, technical) needs confirmation: pass --confirm doomed (no terminal to ask on)\n',
    );
    const wrong = await ectl(['instances', 'delete', 'doomed', '--confirm', 'other']);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe('error: --confirm "other" does not match the instance name "doomed": nothing was done\n');
    const typo = scriptedPrompt(['dooomed']);
    const refused = await ectl(['instances', 'delete', 'doomed', '--scope', 'container,technical,player_data'], { prompt: typo });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/nothing was done/);
    expect(typo.questions).toEqual(['deleting doomed (container, technical, player_data): type the instance name (doomed) to confirm: ']);
    expect((await json<{ state: string }>(['instances', 'get', 'doomed'])).state).toBe('online');
    const typed = scriptedPrompt(['doomed']);
    const ok = await ectl(['instances', 'delete', 'doomed', '--scope', 'container,technical,player_data', '--wait', '--timeout', '30'], {
      prompt: typed,
    });
    expect(ok.stderr).not.toMatch(/error/);
    expect(ok.stdout).toBe('instance doomed deleted\n');
    expect((await ectl(['instances', 'get', 'doomed'])).stderr).toMatch(/INSTANCE_NOT_FOUND/);
  });

  it('restore and update refuse in scripts without --confirm / --yes before anything is changed', async () => {
    const restore = await ectl(['instances', 'restore', 'survival', 'b-1']);
    expect(restore.code).toBe(2);
    expect(restore.stderr).toMatch(/pass --confirm survival/);
  });

  it("exec on a template with neither RCON nor stdin fails with the server's reason; logs prints the tail", async () => {
    // The streamed paths (exec/console over RCON and stdin, logs --follow) run on Docker in instance-streams.test.ts.
    const r = await ectl(['instances', 'exec', 'survival', '--', 'say', 'hi']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error: NOT_IMPLEMENTED: template of instance survival has neither RCON \(stop\.rcon\) nor an open stdin[^\n]*\(HTTP 501\)\n$/,
    );
    expect((await ectl(['instances', 'logs', 'survival', '--follow', '--json'])).code).toBe(2);
    // The removals are offered now: in use, each is refused with the server's reason.
    for (const [args, reason] of [
      [['templates', 'delete', 'mc', '1'], /^error: CONFLICT: template mc version 1 is still used by group g variant v/],
      [['groups', 'delete', 'g'], /^error: CONFLICT: group g still has instances/],
      [['hosts', 'remove', 'host-a'], /^error: CONFLICT: host host-a still holds 1 instance/],
    ] as const) {
      const r = await ectl([...args]);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(reason);
    }
    expect((await ectl(['instances', 'logs', 'survival', '--tail', '5'])).stdout).toMatch(/Done \(1\.0s\)!/);
  });
});

describe('ectl catalog, transfers, tokens, audit, imports and requests', () => {
  it('templates and groups ls/get', async () => {
    expect((await ectl(['templates', 'ls'])).stdout).toMatch(/^mc\s+1\s+mc:1\s+256 MiB\s+0\s+/m);
    expect(await json(['templates', 'get', 'mc', '1'])).toMatchObject({ name: 'mc', version: '1', image: 'mc:1' });
    expect((await ectl(['groups', 'ls'])).stdout).toMatch(/^g\s+persistent\s+packed\s+v=mc@1/m);
    expect((await ectl(['groups', 'get', 'g'])).stdout).toMatch(/^variant v:\s+mc@1$/m);
    expect((await ectl(['templates', 'get', 'mc', '9'])).stderr).toMatch(/TEMPLATE_NOT_FOUND/);
  });

  it('transfer records where a player goes; transfers ls shows it; a target is required', async () => {
    const t = await json<{ transfer: { id: string; status: string }; move: { moved: boolean } }>(['transfer', 'Steve', '--to-group', 'g']);
    expect(t).toMatchObject({ transfer: { status: 'pending' }, move: { moved: false } });
    expect((await ectl(['transfers', 'ls', '--player', 'Steve'])).stdout).toMatch(
      new RegExp(`^${t.transfer.id}\\s+Steve\\s+group:g\\s+pending`, 'm'),
    );
    expect((await ectl(['transfer', 'Steve'])).code).toBe(2);
  });

  it('tokens create prints the secret once; a read token is refused a start with the scope it lacks; revoke ends it', async () => {
    const created = await ectl(['tokens', 'create', 'viewer', '--scope', 'read']);
    expect(created.code).toBe(0);
    const secret = created.stdout.trim();
    expect(secret.length).toBeGreaterThan(16);
    expect(created.stderr).toMatch(/^token viewer \(.+\) created with scopes read; its secret is shown only now:\n$/);
    expect((await ectl(['instances', 'ls'], { token: secret })).code).toBe(0);
    const refused = await ectl(['instances', 'stop', 'survival'], { token: secret });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: FORBIDDEN: token viewer lacks scope instances:write .*\(HTTP 403\)\n$/);
    const list = await json<{ id: string; name: string }[]>(['tokens', 'ls']);
    const id = list.find((t) => t.name === 'viewer')!.id;
    expect((await ectl(['tokens', 'revoke', id])).stdout).toBe(`token viewer (${id}) revoked\n`);
    expect((await ectl(['instances', 'ls'], { token: secret })).stderr).toMatch(/UNAUTHORIZED/);
  });

  it('--wait works for a token that may act on instances but not read commands (it never needs GET /commands)', async () => {
    const secret = (await ectl(['tokens', 'create', 'writer', '--scope', 'instances:write'])).stdout.trim();
    expect((await ectl(['commands', 'ls'], { token: secret })).stderr).toMatch(/FORBIDDEN: token writer lacks scope commands:read/);
    const r = await ectl(['instances', 'restart', 'survival', '--wait', '--timeout', '30'], { token: secret });
    expect(r.stderr).not.toMatch(/error/);
    expect(r.stdout).toBe('instance survival: online\n');
  });

  it('audit lists the mutating calls, filterable by target', async () => {
    const entries = await json<{ action: string; targetKind: string }[]>(['audit', '--target-kind', 'instance', '--limit', '200']);
    expect(entries.map((e) => e.action)).toEqual(expect.arrayContaining(['instance.create', 'instance.stop', 'instance.delete']));
    expect(new Set(entries.map((e) => e.targetKind))).toEqual(new Set(['instance']));
    expect((await ectl(['audit', '--limit', '3'])).stdout.split('\n')[0]).toMatch(/^ID\s+AT\s+ACTOR\s+ACTION\s+TARGET\s+RESULT$/);
  });

  it("imports push resolves a relative directory from the caller's directory, then imports get reads it back", async () => {
    const caller = join(base, 'elsewhere');
    mkdirSync(join(caller, 'old-world', 'world'), { recursive: true });
    writeFileSync(join(caller, 'old-world', 'world', 'level.dat'), 'not really nbt');
    writeFileSync(join(caller, 'old-world', 'server.properties'), 'motd=old\n');
    const pushed = await ectl(['imports', 'push', 'old-world', '--json'], { cwd: caller });
    expect(pushed.code).toBe(0);
    const r = JSON.parse(pushed.stdout) as { uploadId: string; entries: number };
    expect(r.entries).toBeGreaterThan(0);
    expect(await json(['imports', 'get', r.uploadId])).toMatchObject({ uploadId: r.uploadId });
    expect((await ectl(['imports', 'push', 'old-world'], { cwd: base })).code).toBe(2);
  });

  it('requests: create, ls, preview, approve (creates the instance) and reject; preview of a create writes nothing', async () => {
    const preview = await ectl(['preview', '--group', 'g', '--variant', 'v', '--name', 'peek']);
    expect(preview.code).toBe(0);
    expect(JSON.parse(preview.stdout)).toBeTypeOf('object');
    expect((await ectl(['instances', 'get', 'peek'])).code).toBe(1);
    const a = await json<{ id: string; status: string }>([
      'requests',
      'create',
      '--group',
      'g',
      '--variant',
      'v',
      '--name',
      'asked',
      '--note',
      'for the event',
    ]);
    expect(a.status).toBe('pending');
    const b = await json<{ id: string }>(['requests', 'create', '--group', 'g', '--variant', 'v']);
    expect((await ectl(['requests', 'ls', '--status', 'pending'])).stdout).toMatch(new RegExp(`^${a.id}\\s+pending`, 'm'));
    expect((await ectl(['requests', 'preview', a.id])).code).toBe(0);
    expect((await ectl(['requests', 'approve', a.id])).stdout).toMatch(
      new RegExp(`^installation request ${a.id} approved: instance asked \\(i-[0-9a-f]+\\)`),
    );
    expect((await ectl(['requests', 'reject', b.id, '--note', 'no'])).stdout).toBe(`installation request ${b.id} rejected\n`);
    expect((await ectl(['requests', 'reject', b.id])).code).toBe(2);
  });
});

// Last in the file: the instance it creates would change the host's instance count above.
describe('ectl instances create --image', () => {
  it("create --image picks one of the template's image choices by label; another is refused with the choices", async () => {
    expect(
      (
        await api('PUT', '/templates/mc-choices/versions/1', {
          image: 'mc:1',
          images: { 'Java 21': 'mc:1', 'Java 17': 'mc:17' },
          resources: { memoryMb: 256 },
          readiness: { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 10_000, intervalMs: 100 },
          stop: { signal: 'SIGTERM', timeoutMs: 3000 },
        })
      ).status,
    ).toBe(201);
    expect(
      (await api('PUT', '/groups/choices', { kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc-choices', version: '1' } }] }))
        .status,
    ).toBe(201);
    const refused = await ectl(['instances', 'create', '--group', 'choices', '--variant', 'v', '--image', 'Java 8']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('body/image "Java 8" is not one of this template\'s image choices: Java 21 (mc:1), Java 17 (mc:17)');
    const created = await json<{ id: string }>([
      'instances',
      'create',
      '--group',
      'choices',
      '--variant',
      'v',
      '--name',
      'on-java-17',
      '--image',
      'Java 17',
      '--no-start',
    ]);
    expect((await json<{ image: string }>(['instances', 'get', created.id])).image).toBe('mc:17');
  });
});
