// The public API contract (contracts/public-api): every route of the running
// app has a response schema in OpenAPI and an entry in the contract's route
// table (and every entry a route), and the real answers of a representative
// set of routes validate against their schema — checked on the handler's
// payload before serialisation, with every object that does not declare
// `additionalProperties` closed, so a field the schema would drop fails here.

import { Ajv, type ValidateFunction } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_ROUTES } from '../../src/contracts/public-api/routes.js';
import { responseSchemaOf, routeKeyOf } from '../../src/server/response-schemas.js';
import { AGENT_TOKEN, heartbeatBody, startFakeAgent, testOrchestrator, type FakeAgent, type TestOrchestrator } from './support.js';

interface Answer {
  key: string;
  status: number;
  payload: unknown;
}

const answers: Answer[] = [];
let t: TestOrchestrator;
let agent: FakeAgent;

beforeAll(async () => {
  t = await testOrchestrator({
    deps: {
      hooks: {
        onAnswer: (route, status, payload) => {
          const key = routeKeyOf(route.method, route.url);
          if (key && Object.hasOwn(PUBLIC_ROUTES, key))
            answers.push({ key, status, payload: JSON.parse(JSON.stringify(payload ?? null)) as unknown });
        },
      },
    },
  });
  agent = await startFakeAgent();
});
afterAll(async () => {
  await t?.close();
  await agent?.close();
});

/** A copy of `schema` in which every object schema that does not say otherwise admits no other properties. */
function closed(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closed);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(schema))
    out[k] =
      k === 'properties' || k === 'patternProperties'
        ? Object.fromEntries(Object.entries(v as object).map(([p, s]) => [p, closed(s)]))
        : closed(v);
  if (out.type === 'object' && out.properties && !('additionalProperties' in out) && !('patternProperties' in out))
    out.additionalProperties = false;
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true });
const validators = new Map<string, ValidateFunction>();
function validatorFor(key: string, status: number): ValidateFunction {
  const id = `${key} ${status}`;
  let v = validators.get(id);
  if (!v) {
    const [method, url] = [key.slice(0, key.indexOf(' ')), key.slice(key.indexOf(' ') + 1)];
    const response = responseSchemaOf(method, `/api/v1${url}`)!;
    const schema = response[String(status)] ?? response[`${String(status)[0]}xx`];
    expect(schema, `${id}: no response schema for this status`).toBeDefined();
    v = ajv.compile(closed(schema) as object);
    validators.set(id, v);
  }
  return v;
}

async function call(method: string, url: string, opts: Parameters<TestOrchestrator['call']>[2] = {}) {
  const res = await t.call(method, url, opts);
  expect(res.status, `${method} ${url}: ${JSON.stringify(res.body)}`).toBeLessThan(500);
  return res;
}

describe('the public API contract', () => {
  it('documents a response for every route, and the route table names exactly the registered routes', async () => {
    const doc = (await t.call('GET', '/api/v1/openapi.json')).body as {
      paths: Record<string, Record<string, { responses?: Record<string, { content?: unknown }> }>>;
    };
    const registered: string[] = [];
    const missing: string[] = [];
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(operations)) {
        const key = routeKeyOf(method.toUpperCase(), path.replace(/\{([^}]+)\}/g, ':$1'))!;
        registered.push(key);
        const codes = Object.keys(op.responses ?? {});
        const success = codes.filter((c) => c.startsWith('2'));
        if (success.length === 0 || !success.every((c) => c === '204' || op.responses![c]!.content) || !codes.includes('4XX'))
          missing.push(key);
      }
    }
    expect(missing, 'routes without a documented response schema').toEqual([]);
    expect(registered.sort()).toEqual(Object.keys(PUBLIC_ROUTES).sort());
  });

  it('real answers of the routes validate against their schemas before serialisation', async () => {
    const v1 = '/api/v1';
    await call('GET', `${v1}/health`);
    await call('GET', `${v1}/ready`);
    expect((await call('POST', `${v1}/agents/host-a/heartbeat`, { body: heartbeatBody(agent.url), token: AGENT_TOKEN })).status).toBe(200);
    await t.o.ctx.hosts.whenIdle();
    await call('GET', `${v1}/hosts`);
    await call('GET', `${v1}/hosts/host-a`);
    await call('GET', `${v1}/hosts/host-a/unclaimed`);
    await call('GET', `${v1}/kept-data`);
    await call('GET', `${v1}/template-layers`);
    await call('PUT', `${v1}/templates/mc/versions/1`, {
      body: {
        image: 'mc:1',
        resources: { memoryMb: 256 },
        variables: [
          { name: 'RCON_PASSWORD', type: 'string', secret: true },
          { name: 'MOTD', type: 'string', default: 'hi', apply: 'restart_required' },
        ],
        readiness: { kind: 'log', pattern: 'Done \\(', startupTimeoutMs: 5000, intervalMs: 100 },
        stop: { signal: 'SIGTERM', timeoutMs: 3000, rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' } },
        dataPaths: ['world'],
      },
    });
    await call('PUT', `${v1}/templates/mc/versions/2?dryRun=true`, { body: { image: 'mc:2', resources: { memoryMb: 256 } } });
    await call('GET', `${v1}/templates`);
    await call('GET', `${v1}/templates/mc/versions/1`);
    await call('PUT', `${v1}/groups/g`, { body: { kind: 'persistent', variants: [{ id: 'v', template: { name: 'mc', version: '1' } }] } });
    await call('PUT', `${v1}/groups/lobby`, {
      body: {
        kind: 'ephemeral',
        variants: [{ id: 'v', template: { name: 'mc', version: '1' } }],
        scaling: { min: 0, max: 2, buffer: 0 },
        idleTiers: [{ after: '10m', action: 'pause' }],
      },
    });
    await call('GET', `${v1}/groups`);
    await call('GET', `${v1}/groups/g`);
    await call('GET', `${v1}/groups/lobby/fleet`);
    await call('GET', `${v1}/groups/lobby/allocations`);
    await call('GET', `${v1}/system/idle-tiers`);
    await call('POST', `${v1}/instances/preview`, { body: { groupId: 'g', variantId: 'v', name: 'survival' } });
    const created = await call('POST', `${v1}/instances`, {
      body: { groupId: 'g', variantId: 'v', name: 'survival', secrets: { RCON_PASSWORD: 'pw-0123456789' } },
    });
    expect(created.status).toBe(202);
    for (let i = 0; i < 20; i++) {
      const claimed = await t.o.worker.tick();
      await t.o.worker.whenIdle();
      if (claimed.length === 0) break;
    }
    await t.o.supervisor.probeOnce(created.body.id);
    const id = created.body.id as string;
    expect((await call('GET', `${v1}/instances/${id}`)).body.state).toBe('online');
    await call('GET', `${v1}/instances`);
    await call('GET', `${v1}/instances/${id}/history`);
    await call('GET', `${v1}/instances/${id}/revisions`);
    await call('GET', `${v1}/instances/${id}/players`);
    await call('GET', `${v1}/instances/${id}/backups`);
    await call('GET', `${v1}/instances/${id}/backup-policy`);
    await call('PUT', `${v1}/instances/${id}/backup-policy`, { body: { schedule: '0 3 * * *', keep: 3 } });
    await call('PATCH', `${v1}/instances/${id}/settings`, { body: { settings: { MOTD: 'hello' } } });
    await call('PUT', `${v1}/instances/${id}/idle-tiers`, { body: { idleTiers: [] } });
    await call('POST', `${v1}/instances/${id}/maintenance`, { body: { enabled: false } });
    await call('GET', `${v1}/maintenance`);
    await call('GET', `${v1}/registry`);
    await call('GET', `${v1}/transfers`);
    await call('POST', `${v1}/transfers`, { body: { player: 'Steve', target: { instance: id }, move: false } });
    await call('GET', `${v1}/commands`);
    const commands = (await call('GET', `${v1}/commands?limit=1`)).body.commands as { id: string }[];
    await call('GET', `${v1}/commands/${commands[0]!.id}`);
    const token = await call('POST', `${v1}/tokens`, { body: { name: 'reader', scopes: ['read'] } });
    await call('GET', `${v1}/tokens`);
    await call('GET', `${v1}/session`, { token: token.body.secret });
    await call('GET', `${v1}/session`, { token: null });
    await call('DELETE', `${v1}/tokens/${token.body.id}`);
    const request = await call('POST', `${v1}/installation-requests`, {
      body: { groupId: 'g', variantId: 'v', name: 'asked', suggested: { note: 'please' } },
    });
    await call('GET', `${v1}/installation-requests`);
    await call('GET', `${v1}/installation-requests/${request.body.id}/preview`);
    await call('POST', `${v1}/installation-requests/${request.body.id}/reject`, { body: { note: 'no' } });
    await call('POST', `${v1}/instances/${id}/stop`);
    await call('POST', `${v1}/instances/${id}/stop`);
    await call('GET', `${v1}/instances/${id}/update-plan?image=mc:1`);
    await call('GET', `${v1}/audit?limit=20`);
    await call('GET', `${v1}/instances/nope`);

    const failures: string[] = [];
    const seen = new Set<string>();
    for (const a of answers) {
      seen.add(a.key);
      const validate = validatorFor(a.key, a.status);
      if (!validate(a.payload))
        failures.push(
          `${a.key} ${a.status}: ${(validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`).join('; ')}`,
        );
    }
    expect(failures).toEqual([]);
    // A representative set: most routes answered at least once, errors included.
    expect(seen.size).toBeGreaterThanOrEqual(45);
    expect(answers.some((a) => a.status === 404)).toBe(true);
  });
});
