// Operator-only and hidden variables on every path that sets a variable value:
// POST /instances (settings and secrets), PATCH /instances/:id/settings, a group
// variant's env (PUT /groups, dry run included, and `ectl apply`, which writes
// through it) that spawns and allocations create from. A narrow token is refused
// with FORBIDDEN naming the variable and the scopes; admin and manager may. Spawn,
// allocation and update bodies carry no variable values at all.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bufferOutput } from '../../src/cli/output.js';
import { runCli } from '../../src/cli/program.js';
import {
  AGENT_TOKEN,
  heartbeatBody,
  startFakeAgent,
  testOrchestrator,
  type FakeAgent,
  type Loose,
  type TestOrchestrator,
} from '../server/support.js';

let t: TestOrchestrator;
let agent: FakeAgent;
let url: string;
let dir: string;
const tokens: Record<string, string> = {};
const SCOPES = /\(needs scope admin, manager or operator\)/;

const variant = (env: Record<string, string> = {}) => ({
  kind: 'persistent',
  variants: [{ id: 'v', template: { name: 'egg', version: '1' }, env }],
});

async function ectl(args: string[], token: string) {
  const output = bufferOutput();
  const code = await runCli(args, {
    output,
    env: { configPath: join(dir, 'config.json'), urlOverride: url, tokenOverride: token },
    version: 'test',
  });
  return { code, stdout: output.stdout, stderr: output.stderr };
}

function expectForbidden(res: { status: number; body: Loose }, message: RegExp): void {
  expect(res.status, JSON.stringify(res.body)).toBe(403);
  expect(res.body.error.code).toBe('FORBIDDEN');
  expect(res.body.error.message).toMatch(message);
  expect(res.body.error.message).toMatch(SCOPES);
}

beforeAll(async () => {
  t = await testOrchestrator();
  url = await t.o.app.listen({ host: '127.0.0.1', port: 0 });
  dir = mkdtempSync(join(tmpdir(), 'ec-operator-only-'));
  agent = await startFakeAgent();
  expect(
    (
      await t.call('POST', '/api/v1/agents/host-a/heartbeat', {
        body: heartbeatBody(agent.url, { heartbeatIntervalMs: 600_000 }),
        token: AGENT_TOKEN,
      })
    ).status,
  ).toBe(200);
  await t.o.ctx.hosts.whenIdle();
  expect(
    (
      await t.call('PUT', '/api/v1/templates/egg/versions/1', {
        body: {
          image: 'mc:1',
          resources: { memoryMb: 64 },
          variables: [
            { name: 'MOTD', type: 'string', default: 'hi', apply: 'restart_required' },
            { name: 'DL_TOKEN', env: 'DOWNLOAD_TOKEN', type: 'string', default: 'none', hidden: true, apply: 'restart_required' },
            { name: 'LICENSE', type: 'string', secret: true, operatorOnly: true },
          ],
        },
      })
    ).status,
  ).toBe(201);
  expect((await t.call('PUT', '/api/v1/groups/g', { body: variant() })).status).toBe(201);
  const scopes = {
    narrow: ['read', 'instances:write'],
    writer: ['read', 'groups:write', 'templates:write'],
    fleet: ['read', 'spawn:g', 'allocate:g'],
    manager: ['manager'],
  };
  for (const [name, s] of Object.entries(scopes)) {
    const res = await t.call('POST', '/api/v1/tokens', { body: { name, scopes: s } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    tokens[name] = res.body.secret as string;
  }
});

afterAll(async () => {
  await t?.close();
  await agent?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const create = (token: string, name: string, extra: Record<string, unknown>) =>
  t.call('POST', '/api/v1/instances', { token, body: { groupId: 'g', variantId: 'v', name, start: false, ...extra } });

describe('operator-only and hidden variables on every path that sets a value', () => {
  it('POST /instances: a narrow token may not set a hidden setting or an operator-only secret; nothing is created', async () => {
    expectForbidden(
      await create(tokens.narrow!, 'n1', { settings: { MOTD: 'x', DL_TOKEN: 'mine' } }),
      /^token narrow may not set DL_TOKEN: operator-only variable of this template/,
    );
    expectForbidden(await create(tokens.narrow!, 'n2', { secrets: { LICENSE: 'k' } }), /may not set LICENSE:/);
    for (const name of ['n1', 'n2']) expect((await t.call('GET', `/api/v1/instances/${name}`)).status).toBe(404);
    expect((await create(tokens.narrow!, 'n3', { settings: { MOTD: 'x' } })).status).toBe(202);
  });

  it('POST /instances: admin and manager may', async () => {
    for (const [token, name] of [
      [t.adminToken, 'a1'],
      [tokens.manager!, 'm1'],
    ] as const) {
      const res = await create(token, name, { settings: { DL_TOKEN: 'ops' }, secrets: { LICENSE: 'k' } });
      expect(res.status, JSON.stringify(res.body)).toBe(202);
      expect((await t.call('GET', `/api/v1/instances/${name}`)).body.settings.DL_TOKEN).toBe('ops');
    }
  });

  it('PATCH /instances/:id/settings: refused to a narrow token, allowed to a manager', async () => {
    expectForbidden(
      await t.call('PATCH', '/api/v1/instances/m1/settings', { token: tokens.narrow!, body: { settings: { DL_TOKEN: 'x' } } }),
      /may not set DL_TOKEN:/,
    );
    expectForbidden(
      await t.call('PATCH', '/api/v1/instances/m1/settings', { token: tokens.narrow!, body: { settings: { LICENSE: 'x' } } }),
      /may not set LICENSE:/,
    );
    expect(
      (await t.call('PATCH', '/api/v1/instances/m1/settings', { token: tokens.manager!, body: { settings: { DL_TOKEN: 'next' } } })).status,
    ).toBeLessThan(300);
  });

  it('PUT /groups/:id: a variant env entry that sets an operator-only variable needs an operator, also in a dry run', async () => {
    const denied = /^body\/variants\/0\/env: token writer may not set DL_TOKEN \(env DOWNLOAD_TOKEN\): operator-only variable/;
    expectForbidden(await t.call('PUT', '/api/v1/groups/g', { token: tokens.writer!, body: variant({ DOWNLOAD_TOKEN: 'mine' }) }), denied);
    expectForbidden(
      await t.call('PUT', '/api/v1/groups/g?dryRun=true', { token: tokens.writer!, body: variant({ DOWNLOAD_TOKEN: 'mine' }) }),
      denied,
    );
    expectForbidden(
      await t.call('PUT', '/api/v1/groups/other', { token: tokens.writer!, body: variant({ LICENSE: 'k' }) }),
      /may not set LICENSE:/,
    );
    expect((await t.call('GET', '/api/v1/groups/g')).body.variants[0].env).toEqual({});
    expect((await t.call('GET', '/api/v1/groups/other')).status).toBe(404);
    // Other env entries stay the group writer's.
    expect((await t.call('PUT', '/api/v1/groups/g', { token: tokens.writer!, body: variant({ JAVA_OPTS: '-Xmx1G' }) })).status).toBe(200);
  });

  it('PUT /groups/:id: a manager may; a narrow writer may then keep the value unchanged, not change it', async () => {
    expect(
      (await t.call('PUT', '/api/v1/groups/g', { token: tokens.manager!, body: variant({ DOWNLOAD_TOKEN: 'ops-value' }) })).status,
    ).toBe(200);
    const kept = await t.call('PUT', '/api/v1/groups/g', {
      token: tokens.writer!,
      body: { ...variant({ DOWNLOAD_TOKEN: 'ops-value', JAVA_OPTS: '-Xmx2G' }), placement: 'distributed' },
    });
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    expectForbidden(
      await t.call('PUT', '/api/v1/groups/g', { token: tokens.writer!, body: variant({ DOWNLOAD_TOKEN: 'changed' }) }),
      /may not set DL_TOKEN \(env DOWNLOAD_TOKEN\)/,
    );
    expect((await t.call('GET', '/api/v1/groups/g')).body.variants[0].env).toEqual({ DOWNLOAD_TOKEN: 'ops-value', JAVA_OPTS: '-Xmx2G' });
  });

  it('spawn creates from the variant the operator set; spawn, allocation and update bodies carry no variable values', async () => {
    const spawned = await t.call('POST', '/api/v1/groups/g/spawn', { token: tokens.fleet!, body: {} });
    expect(spawned.status, JSON.stringify(spawned.body)).toBe(202);
    const revisions = await t.call('GET', `/api/v1/instances/${spawned.body.id as string}/revisions`);
    expect(revisions.body.revisions[0].config.env.DOWNLOAD_TOKEN).toBe('ops-value');
    for (const [path, token] of [
      ['/api/v1/groups/g/spawn', tokens.fleet!],
      ['/api/v1/groups/g/allocations', tokens.fleet!],
      ['/api/v1/instances/m1/update', tokens.narrow!],
    ] as const) {
      const res = await t.call('POST', path, { token, body: { image: 'mc:2', confirm: true, settings: { DL_TOKEN: 'mine' } } });
      expect(res.status, `${path} ${JSON.stringify(res.body)}`).toBe(400);
      expect(res.body.error.code).toBe('VALIDATION_FAILED');
    }
  });

  it('ectl apply: a narrow writer is refused before anything is written, with the variable and the scopes; a manager applies', async () => {
    const file = join(dir, 'network.yml');
    writeFileSync(
      file,
      [
        'groups:',
        '  - id: proxied',
        '    kind: persistent',
        '    variants:',
        '      - id: v',
        '        template: { name: egg, version: "1" }',
        '        env: { DOWNLOAD_TOKEN: mine }',
        '',
      ].join('\n'),
    );
    const narrow = await ectl(['apply', '-f', file], tokens.writer!);
    expect(narrow.code).not.toBe(0);
    expect(narrow.stderr).toMatch(
      /may not set DL_TOKEN \(env DOWNLOAD_TOKEN\): operator-only variable of this template \(needs scope admin, manager or operator\)/,
    );
    expect((await t.call('GET', '/api/v1/groups/proxied')).status).toBe(404);
    const manager = await ectl(['apply', '-f', file], tokens.manager!);
    expect(manager.code, manager.stderr).toBe(0);
    expect((await t.call('GET', '/api/v1/groups/proxied')).body.variants[0].env).toEqual({ DOWNLOAD_TOKEN: 'mine' });
  });
});
