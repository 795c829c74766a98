// The limit on failed authentication through the real orchestrator over HTTP
// (127.0.0.1): wrong panel logins and wrong bearer tokens are counted per
// client address, the 11th within a minute answers 429 RATE_LIMITED with
// Retry-After, successes never count, the budget refills, and `off` turns it off.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { freePort } from '../support/registry.js';

const ADMIN = `admin-${'l'.repeat(24)}`;
const CSRF = { 'x-endercloud-csrf': '1', 'content-type': 'application/json' };
let base: string;
let offsetMs = 0;
const clock = { now: () => Date.now() + offsetMs };
const running: Orchestrator[] = [];

async function start(extra: Record<string, string> = {}): Promise<Orchestrator> {
  const dir = mkdtempSync(join(base, 'o-'));
  const o = await startOrchestrator(
    orchestratorConfig({
      ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
      ENDERCLOUD_DATA_DIR: join(dir, 'data'),
      ENDERCLOUD_ADMIN_TOKEN: ADMIN,
      ENDERCLOUD_LOG_LEVEL: 'silent',
      ...extra,
    }),
    { clock },
  );
  running.push(o);
  return o;
}

const login = (o: Orchestrator, token: string) =>
  fetch(`${o.url}/api/v1/session`, { method: 'POST', headers: CSRF, body: JSON.stringify({ token }) });
const hosts = (o: Orchestrator, token: string) => fetch(`${o.url}/api/v1/hosts`, { headers: { authorization: `Bearer ${token}` } });

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'ec-ratelimit-'));
});
afterAll(async () => {
  for (const o of running) await o.stop();
  rmSync(base, { recursive: true, force: true });
});

describe('failed authentication limit (default 10/1m per address)', () => {
  it('answers the 11th wrong login 429 RATE_LIMITED with Retry-After; every credential from that address waits; the budget refills', async () => {
    const o = await start();
    // Successes first: they never count.
    for (let i = 0; i < 15; i++) expect((await hosts(o, ADMIN)).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await login(o, `wrong-guess-${i}`)).status);
    expect(statuses).toEqual([...Array<number>(10).fill(401), 429, 429]);
    const limited = await login(o, 'wrong-again');
    expect(limited.status).toBe(429);
    const retryAfter = Number(limited.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(6);
    const body = (await limited.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('RATE_LIMITED');
    expect(body.error.message).toMatch(/too many failed authentications from 127\.0\.0\.1.*retry in \d+ s/);
    // While limited, credentials from the address are not even checked: a right one waits too (no oracle for guesses).
    expect((await hosts(o, ADMIN)).status).toBe(429);
    expect((await hosts(o, 'ect_guess')).status).toBe(429);
    // Requests without credentials are not attempts: they stay 401 / public.
    expect((await fetch(`${o.url}/api/v1/hosts`)).status).toBe(401);
    expect((await fetch(`${o.url}/api/v1/health`)).status).toBe(200);
    offsetMs += retryAfter * 1000;
    try {
      expect((await hosts(o, ADMIN)).status).toBe(200);
      expect((await login(o, ADMIN)).status).toBe(200);
      // One token refilled and the success gave its own back: exactly one more failure, then 429 again.
      expect((await hosts(o, 'ect_guess')).status).toBe(401);
      expect((await hosts(o, 'ect_guess')).status).toBe(429);
    } finally {
      offsetMs = 0;
    }
  });

  it('counts wrong bearer tokens on agent endpoints too; a panel session cookie is not an attempt', async () => {
    const o = await start({ ENDERCLOUD_AUTH_FAILURE_LIMIT: '3/1m', ENDERCLOUD_AGENT_TOKEN: `agent-${'a'.repeat(24)}` });
    const ok = await login(o, ADMIN);
    const cookie = ok.headers.get('set-cookie')!.split(';')[0]!;
    const beat = () =>
      fetch(`${o.url}/api/v1/agents/agent-1/heartbeat`, {
        method: 'POST',
        headers: { authorization: 'Bearer not-the-agent-token', ...CSRF },
        body: '{}',
      });
    expect([(await beat()).status, (await beat()).status, (await beat()).status, (await beat()).status]).toEqual([401, 401, 401, 429]);
    expect((await fetch(`${o.url}/api/v1/hosts`, { headers: { cookie } })).status).toBe(200);
  });

  it('off: every wrong login is a plain 401', async () => {
    const o = await start({ ENDERCLOUD_AUTH_FAILURE_LIMIT: 'off' });
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) statuses.push((await login(o, `wrong-${i}`)).status);
    expect(new Set(statuses)).toEqual(new Set([401]));
  });
});
