// Request validation. Bodies are validated as sent (src/shared/validation.ts):
// a `null | array` body field takes a one-element array (Ajv's array coercion
// used to unwrap it and answer "must be null"), while query strings keep
// their coercion; a list of literals names its values. The route list is read
// from the OpenAPI document, so a new `null | array` body fails here until it
// gets its own case.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { group, instance } from '../store/fixtures.js';
import { testOrchestrator, type Loose, type TestOrchestrator } from './support.js';

let t: TestOrchestrator;
beforeAll(async () => {
  t = await testOrchestrator();
  await t.o.store.groups.put(group('g1'));
  await t.o.store.instances.create(instance('i1', { name: 'world' }));
});
afterAll(async () => {
  await t?.close();
});

/** `METHOD path field` for every body property whose schema is a union of null and an array. */
function nullableArrayBodyFields(doc: Loose): string[] {
  const found: string[] = [];
  for (const [path, ops] of Object.entries<Loose>(doc.paths)) {
    for (const [method, op] of Object.entries<Loose>(ops)) {
      const body = op.requestBody?.content?.['application/json']?.schema;
      for (const [field, s] of Object.entries<Loose>(body?.properties ?? {})) {
        // OpenAPI 3.0 writes `null | array` as a nullable array; an anyOf is checked too.
        const branches: Loose[] = s.anyOf ?? s.oneOf ?? [s];
        const nullable = s.nullable === true || branches.some((b) => b.type === 'null' || b.nullable === true);
        if (nullable && branches.some((b) => b.type === 'array')) found.push(`${method.toUpperCase()} ${path} ${field}`);
      }
    }
  }
  return found;
}

describe('null | array request bodies', () => {
  it('are exactly the ones tested below', async () => {
    const doc = (await t.call('GET', '/api/v1/openapi.json')).body;
    expect(nullableArrayBodyFields(doc).sort()).toEqual([
      'PUT /api/v1/groups/{id} idleTiers',
      'PUT /api/v1/groups/{id}/idle-tiers idleTiers',
      'PUT /api/v1/instances/{id}/idle-tiers idleTiers',
      'PUT /api/v1/system/idle-tiers idleTiers',
    ]);
  });

  it.each([
    ['PUT /groups/:id/idle-tiers', '/api/v1/groups/g1/idle-tiers', (b: Loose) => b.idleTiers],
    ['PUT /system/idle-tiers', '/api/v1/system/idle-tiers', (b: Loose) => b.tiers],
  ])('%s takes one tier', async (_name, url, tiersOf) => {
    const res = await t.call('PUT', url, { body: { idleTiers: [{ after: '10m', action: 'pause' }] } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(tiersOf(res.body)).toEqual([{ after: '10m', afterMs: 600_000, action: 'pause' }]);
  });

  it("PUT /groups/:id takes one top-level idle tier (the group's sleep)", async () => {
    const tpl = await t.call('PUT', '/api/v1/templates/one-tier/versions/1', {
      body: { image: 'busybox:1', resources: { memoryMb: 256 } },
    });
    expect(tpl.status).toBeLessThan(300);
    const res = await t.call('PUT', '/api/v1/groups/one-tier', {
      body: {
        kind: 'persistent',
        variants: [{ id: 'v', template: { name: 'one-tier', version: '1' } }],
        idleTiers: [{ after: '10m', action: 'pause' }],
      },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.idleTiers).toEqual([{ after: '10m', afterMs: 600_000, action: 'pause' }]);
  });

  it('PUT /instances/:id/idle-tiers takes one tier', async () => {
    const res = await t.call('PUT', '/api/v1/instances/world/idle-tiers', { body: { idleTiers: [{ after: '10m', action: 'pause' }] } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ id: 'i1', idleTiers: [{ after: '10m', afterMs: 600_000, action: 'pause' }] });
  });

  it('PUT /instances/:id/idle-tiers takes [] (sleep off for this instance) and null (follow the group)', async () => {
    const off = await t.call('PUT', '/api/v1/instances/world/idle-tiers', { body: { idleTiers: [] } });
    expect(off.status).toBe(200);
    expect(off.body).toEqual({ id: 'i1', idleTiers: [] });
    expect((await t.o.store.instances.get('i1'))?.fleet?.idleTiers).toEqual([]);
    const follow = await t.call('PUT', '/api/v1/instances/world/idle-tiers', { body: { idleTiers: null } });
    expect(follow.body).toEqual({ id: 'i1', idleTiers: null });
    expect((await t.o.store.instances.get('i1'))?.fleet?.idleTiers).toBeUndefined();
  });

  it('a bad tier is refused naming it; a wrapped or quoted value is not coerced into shape', async () => {
    const bad = await t.call('PUT', '/api/v1/instances/world/idle-tiers', { body: { idleTiers: [{ after: '10m', action: 'explode' }] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toContain('body/idleTiers[0].action');
    const scalar = await t.call('PUT', '/api/v1/instances/world/idle-tiers', { body: { idleTiers: { after: '10m', action: 'pause' } } });
    expect(scalar.status).toBe(400);
    expect(scalar.body.error.message).toContain('body/idleTiers');
    const quoted = await t.call('PUT', '/api/v1/templates/q/versions/1', { body: { image: 'busybox:1', resources: { memoryMb: '256' } } });
    expect(quoted.status).toBe(400);
    expect(quoted.body.error.message).toContain('memoryMb');
  });

  it('query strings are still coerced from text', async () => {
    const res = await t.call('GET', '/api/v1/audit?limit=1');
    expect(res.status).toBe(200);
  });

  it('a value outside a list of literals is refused naming every allowed value', async () => {
    const res = await t.call('GET', '/api/v1/instances?state=bogus');
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/^querystring\/state must be one of draft, .*\bonline\b.*\bintervention_required\b/);
    expect((await t.call('GET', '/api/v1/instances?state=online')).status).toBe(200);
  });
});

describe('oversized bodies', () => {
  it('a JSON body past the 1 MiB limit is 413 BODY_TOO_LARGE naming the limit, and nothing is written', async () => {
    const res = await t.call('PUT', '/api/v1/templates/huge/versions/1', {
      body: { image: 'busybox:1', resources: { memoryMb: 64 }, description: 'x'.repeat(1024 * 1024 + 10) },
    });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('BODY_TOO_LARGE');
    expect(res.body.error.message).toContain(`${1024 * 1024} bytes`);
    expect((await t.call('GET', '/api/v1/templates/huge')).status).toBe(404);
  });
});
