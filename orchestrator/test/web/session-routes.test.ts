// The panel's server side over real HTTP (no browser, no agent): login and
// logout, the session cookie as a credential (revocation, expiry, a restart),
// the CSRF checks, the event stream, and the static files' safety.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { orchestratorConfig } from '../../src/server/config.js';
import { startOrchestrator, type Orchestrator } from '../../src/server/orchestrator.js';
import { freePort } from '../support/registry.js';

const ADMIN = `admin-${'w'.repeat(24)}`;
let base: string;
let webDir: string;
let env: Record<string, string>;
let orchestrator: Orchestrator;
let offsetMs = 0;
const clock = { now: () => Date.now() + offsetMs };

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const url = (path: string) => `${orchestrator.url}${path}`;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const CSRF = { 'x-endercloud-csrf': '1' };

async function start(): Promise<void> {
  orchestrator = await startOrchestrator(orchestratorConfig(env), { clock });
}

async function login(
  token: string,
  headers: Record<string, string> = CSRF,
): Promise<{ status: number; cookie: string | undefined; setCookie: string | null; body: Json }> {
  const res = await fetch(url('/api/v1/session'), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ token }),
  });
  const setCookie = res.headers.get('set-cookie');
  return { status: res.status, setCookie, cookie: setCookie?.split(';')[0], body: (await res.json()) as Json };
}

async function createToken(name: string, scopes: string[]): Promise<{ id: string; secret: string }> {
  const res = await fetch(url('/api/v1/tokens'), {
    method: 'POST',
    headers: { ...bearer(ADMIN), 'content-type': 'application/json' },
    body: JSON.stringify({ name, scopes }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; secret: string };
}

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'ec-web-'));
  webDir = join(base, 'dist');
  mkdirSync(join(webDir, 'assets'), { recursive: true });
  writeFileSync(join(webDir, 'index.html'), '<!doctype html><title>panel</title>');
  writeFileSync(join(webDir, 'assets', 'app-abc123.js'), 'console.log(1)');
  writeFileSync(join(base, 'secret.txt'), 'outside the web dir');
  env = {
    ENDERCLOUD_LISTEN: `127.0.0.1:${await freePort()}`,
    ENDERCLOUD_DATA_DIR: join(base, 'data'),
    ENDERCLOUD_ADMIN_TOKEN: ADMIN,
    ENDERCLOUD_AGENT_TOKEN: `agent-${'z'.repeat(24)}`,
    ENDERCLOUD_LOG_LEVEL: 'silent',
    ENDERCLOUD_WEB_DIR: webDir,
  };
  await start();
});

afterAll(async () => {
  await orchestrator?.stop();
  rmSync(base, { recursive: true, force: true });
});

describe('panel sessions', () => {
  it('a login needs the CSRF header and a user token (not the agent token); the cookie is HttpOnly, SameSite=Strict, Path=/', async () => {
    expect((await login(ADMIN, {})).status).toBe(403);
    expect((await login('ect_nope')).status).toBe(401);
    expect((await login(env.ENDERCLOUD_AGENT_TOKEN!)).status).toBe(401);
    const ok = await login(ADMIN);
    expect(ok.status).toBe(200);
    expect(ok.body).toEqual({ authenticated: true, name: 'admin (preset)', kind: 'preset-admin', scopes: ['admin'], via: 'session' });
    expect(ok.setCookie).toMatch(/^endercloud_session=[A-Za-z0-9_-]{43}; HttpOnly; SameSite=Strict; Path=\/; Max-Age=43200$/);
    const me = await fetch(url('/api/v1/session'), { headers: { cookie: ok.cookie! } });
    expect(await me.json()).toEqual({
      authenticated: true,
      name: 'admin (preset)',
      kind: 'preset-admin',
      scopes: ['admin'],
      via: 'session',
    });
    // The bearer path is unchanged: no CSRF header needed.
    expect(await (await fetch(url('/api/v1/session'), { headers: bearer(ADMIN) })).json()).toMatchObject({ via: 'bearer' });
    const put = await fetch(url('/api/v1/maintenance'), {
      method: 'POST',
      headers: { ...bearer(ADMIN), 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: false }),
    });
    expect(put.status).toBe(200);
    // Only the hash of the session id is stored.
    const rows = await orchestrator.store.webSessions.get(ok.cookie!.split('=')[1]!);
    expect(rows).toBeUndefined();
  });

  it('a cookie-authenticated mutation needs the CSRF header and, when sent, a same-origin Origin', async () => {
    const { cookie } = await login(ADMIN);
    const post = (headers: Record<string, string>) =>
      fetch(url('/api/v1/maintenance'), {
        method: 'POST',
        headers: { cookie: cookie!, 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ enabled: false }),
      });
    const bare = await post({});
    expect(bare.status).toBe(403);
    expect(((await bare.json()) as Json).error.message).toMatch(/x-endercloud-csrf/);
    expect((await post({ ...CSRF, origin: 'http://evil.example' })).status).toBe(403);
    expect((await post({ ...CSRF, origin: 'null' })).status).toBe(403);
    expect((await post({ ...CSRF, origin: orchestrator.url })).status).toBe(200);
    expect((await post(CSRF)).status).toBe(200);
  });

  it('scopes come from the token: a read token reads and is refused a write; revoking the token ends its sessions', async () => {
    const viewer = await createToken('viewer', ['read']);
    const { cookie, body } = await login(viewer.secret);
    expect(body).toMatchObject({ name: 'viewer', scopes: ['read'] });
    expect((await fetch(url('/api/v1/instances'), { headers: { cookie: cookie! } })).status).toBe(200);
    const refused = await fetch(url('/api/v1/maintenance'), {
      method: 'POST',
      headers: { cookie: cookie!, ...CSRF, 'content-type': 'application/json' },
      body: JSON.stringify({ enabled: true }),
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as Json).error.message).toMatch(/lacks scope manager/);
    expect((await fetch(url(`/api/v1/tokens/${viewer.id}`), { method: 'DELETE', headers: bearer(ADMIN) })).status).toBe(200);
    const after = await fetch(url('/api/v1/session'), { headers: { cookie: cookie! } });
    expect(after.status).toBe(401);
    expect(((await after.json()) as Json).error.message).toMatch(/sign in again/);
  });

  it('sessions are kept in the store: they survive a restart; logout ends one; they expire after 12 h', async () => {
    const { cookie } = await login(ADMIN);
    const { cookie: other } = await login(ADMIN);
    await orchestrator.stop();
    await start();
    expect((await fetch(url('/api/v1/session'), { headers: { cookie: cookie! } })).status).toBe(200);
    const noHeader = await fetch(url('/api/v1/session'), { method: 'DELETE', headers: { cookie: cookie! } });
    expect(noHeader.status).toBe(403);
    const out = await fetch(url('/api/v1/session'), { method: 'DELETE', headers: { cookie: cookie!, ...CSRF } });
    expect(out.status).toBe(204);
    expect(out.headers.get('set-cookie')).toBe('endercloud_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0');
    expect((await fetch(url('/api/v1/session'), { headers: { cookie: cookie! } })).status).toBe(401);
    expect((await fetch(url('/api/v1/session'), { headers: { cookie: other! } })).status).toBe(200);
    offsetMs = 12 * 60 * 60 * 1000 + 1000;
    try {
      expect((await fetch(url('/api/v1/session'), { headers: { cookie: other! } })).status).toBe(401);
    } finally {
      offsetMs = 0;
    }
    expect((await fetch(url('/api/v1/session'), { headers: { cookie: 'endercloud_session=garbage' } })).status).toBe(401);
    expect((await fetch(url('/api/v1/session'), { headers: bearer('ect_nope') })).status).toBe(401);
    // No credentials at all (a browser's first visit): "not signed in" is an answer, not an error.
    const anonymous = await fetch(url('/api/v1/session'));
    expect(anonymous.status).toBe(200);
    expect(anonymous.headers.get('cache-control')).toBe('no-store');
    expect(await anonymous.json()).toEqual({ authenticated: false });
    // Only GET /session: every other route still needs credentials, and logout without a session is 401.
    expect((await fetch(url('/api/v1/instances'))).status).toBe(401);
    expect((await fetch(url('/api/v1/session'), { method: 'DELETE', headers: CSRF })).status).toBe(401);
  });

  it('a preset-admin session ends when the orchestrator restarts with another ENDERCLOUD_ADMIN_TOKEN, or none; token sessions stay', async () => {
    const viewer = await createToken('rotation-viewer', ['read']);
    const { cookie: viewerCookie } = await login(viewer.secret);
    const { cookie } = await login(ADMIN);
    const { cookie: unsetLater } = await login(ADMIN);
    const rotated = `rotated-${'r'.repeat(24)}`;
    const restartWith = async (adminToken: string | undefined) => {
      await orchestrator.stop();
      const { ENDERCLOUD_ADMIN_TOKEN: _old, ...rest } = env;
      orchestrator = await startOrchestrator(
        orchestratorConfig(adminToken === undefined ? rest : { ...rest, ENDERCLOUD_ADMIN_TOKEN: adminToken }),
        {
          clock,
        },
      );
    };
    try {
      // Same data dir, another preset: the old preset's session is refused (and removed), naming the cause.
      await restartWith(rotated);
      const refused = await fetch(url('/api/v1/session'), { headers: { cookie: cookie! } });
      expect(refused.status).toBe(401);
      expect(((await refused.json()) as Json).error.message).toMatch(/admin token \(ENDERCLOUD_ADMIN_TOKEN\) changed.*sign in again/);
      expect((await fetch(url('/api/v1/instances'), { headers: { cookie: cookie! } })).status).toBe(401);
      expect((await fetch(url('/api/v1/session'), { headers: { cookie: viewerCookie! } })).status).toBe(200);
      // A session signed in with the new preset works.
      const fresh = await login(rotated);
      expect((await fetch(url('/api/v1/instances'), { headers: { cookie: fresh.cookie! } })).status).toBe(200);
      // Back to the first preset: the session refused above was removed, it does not come back.
      await restartWith(ADMIN);
      expect((await fetch(url('/api/v1/session'), { headers: { cookie: cookie! } })).status).toBe(401);
      expect((await fetch(url('/api/v1/session'), { headers: { cookie: fresh.cookie! } })).status).toBe(401);
      // No preset at all: preset sessions end too.
      await restartWith(undefined);
      const unset = await fetch(url('/api/v1/session'), { headers: { cookie: unsetLater! } });
      expect(unset.status).toBe(401);
      expect(((await unset.json()) as Json).error.message).toMatch(/ENDERCLOUD_ADMIN_TOKEN is no longer configured/);
    } finally {
      await orchestrator.stop();
      await start();
    }
  });
});

describe('the event stream', () => {
  it('sends one change event per changed row to a signed-in reader; a router token is refused', async () => {
    const router = await createToken('edge', ['router']);
    expect((await fetch(url('/api/v1/events'), { headers: bearer(router.secret) })).status).toBe(403);
    expect((await fetch(url('/api/v1/events'))).status).toBe(401);
    const { cookie } = await login(ADMIN);
    const abort = new AbortController();
    const res = await fetch(url('/api/v1/events'), { headers: { cookie: cookie! }, signal: abort.signal });
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let text = '';
    const readUntil = async (pattern: RegExp) => {
      const deadline = Date.now() + 10_000;
      while (!pattern.test(text)) {
        if (Date.now() > deadline) throw new Error(`no ${String(pattern)} in ${JSON.stringify(text)}`);
        const { value, done } = await reader.read();
        if (done) throw new Error('stream ended');
        text += decoder.decode(value, { stream: true });
      }
    };
    try {
      await readUntil(/event: ready\n/);
      const maintenance = await fetch(url('/api/v1/maintenance'), {
        method: 'POST',
        headers: { ...bearer(ADMIN), 'content-type': 'application/json' },
        body: JSON.stringify({ enabled: true, message: 'soon back' }),
      });
      expect(maintenance.status).toBe(200);
      await readUntil(/event: change\ndata: \{"kind":"system"[^\n]*\}\n\n/);
    } finally {
      abort.abort();
      await fetch(url('/api/v1/maintenance'), {
        method: 'POST',
        headers: { ...bearer(ADMIN), 'content-type': 'application/json' },
        body: JSON.stringify({ enabled: false }),
      });
    }
  });

  it('an open stream does not hold up a shutdown: it is ended first', async () => {
    const { cookie } = await login(ADMIN);
    const res = await fetch(url('/api/v1/events'), { headers: { cookie: cookie! } });
    const reader = res.body!.getReader();
    await reader.read();
    await orchestrator.stop();
    let done = false;
    for (let i = 0; i < 20 && !done; i += 1) done = (await reader.read()).done;
    expect(done).toBe(true);
    await start();
  });
});

describe('the static panel', () => {
  it('serves index.html for panel routes, assets with a long cache, never a file outside the web dir', async () => {
    for (const path of ['/', '/hosts', '/instances/i-1']) {
      const res = await fetch(url(path));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'self';/);
      expect(await res.text()).toContain('<title>panel</title>');
    }
    const asset = await fetch(url('/assets/app-abc123.js'));
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect((await fetch(url('/assets/missing.js'))).status).toBe(404);
    for (const path of ['/..%2fsecret.txt', '/assets/..%2f..%2fsecret.txt', '/%2e%2e/secret.txt']) {
      const res = await fetch(url(path));
      expect(await res.text(), path).not.toContain('outside the web dir');
    }
    const api = await fetch(url('/api/v1/nothing-here'));
    expect(api.status).toBe(404);
    expect(((await api.json()) as Json).error).toEqual({ code: 'NOT_FOUND', message: 'no route GET /api/v1/nothing-here' });
  });
});

describe('behind a TLS-terminating proxy (ENDERCLOUD_PUBLIC_URL=https://…)', () => {
  it('marks the cookie Secure and accepts the public origin as Origin', async () => {
    await orchestrator.stop();
    env = { ...env, ENDERCLOUD_PUBLIC_URL: 'https://panel.example.com' };
    await start();
    const { setCookie, cookie } = await login(ADMIN);
    expect(setCookie).toMatch(/; Secure$/);
    const post = (origin: string) =>
      fetch(url('/api/v1/maintenance'), {
        method: 'POST',
        headers: { cookie: cookie!, ...CSRF, origin, 'content-type': 'application/json' },
        body: JSON.stringify({ enabled: false }),
      });
    expect((await post('https://panel.example.com')).status).toBe(200);
    expect((await post('https://evil.example.com')).status).toBe(403);
  });
});
