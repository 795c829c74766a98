// The registry client against a real HTTP server speaking the SSE contract.
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/logger.js';
import { formatSseEvent } from '../../src/protocol/registry-contract.js';
import { backoffDelay, RegistryClient, SseParser, type RegistryClientOptions } from '../../src/router/registry-client.js';
import type { RegistryChange } from '../../src/router/registry-state.js';
import { waitUntil } from './harness.js';
import { backend, OrchestratorStub, TOKEN } from './orchestrator-stub.js';

const logger = createLogger('registry-client-test', 'silent');
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function stub(keepaliveMs = 15_000): Promise<OrchestratorStub> {
  const s = new OrchestratorStub(keepaliveMs);
  await s.start();
  cleanups.push(() => s.stop());
  return s;
}

function client(s: OrchestratorStub, extra: Partial<RegistryClientOptions> = {}): RegistryClient {
  const c = new RegistryClient({ baseUrl: s.url, token: TOKEN, logger, backoff: { initialMs: 40, maxMs: 200 }, ...extra });
  cleanups.push(() => c.stop());
  c.start();
  return c;
}

describe('registry client', () => {
  it('applies the snapshot, then upserts and removals in order, emitting change events', async () => {
    const s = await stub(30);
    s.reset([backend('lobby-1', { address: '127.0.0.1:1000' })], 7);
    const c = client(s);
    const changes: RegistryChange[] = [];
    c.subscribe((ch) => changes.push(ch));
    await waitUntil(() => c.connected, 3000, 'snapshot');
    expect(c.revision).toBe(7);
    expect(c.get('lobby-1')?.address).toBe('127.0.0.1:1000');

    s.upsert(backend('event-1', { status: 'Paused', address: '127.0.0.1:1001' }));
    s.patch('lobby-1', { players: { online: 3, max: 20 } });
    s.remove('event-1');
    await waitUntil(() => c.revision === 10, 3000, 'three changes');
    expect(c.get('event-1')).toBeUndefined();
    expect(c.get('lobby-1')?.players).toEqual({ online: 3, max: 20 });
    expect(changes.map((ch) => ch.kind)).toEqual(['snapshot', 'upsert', 'upsert', 'remove']);
    // Keepalive comments (every 30 ms here) and a replayed revision change nothing.
    s.broadcast(formatSseEvent('upsert', { revision: 9, backend: backend('ghost') }));
    await new Promise((r) => setTimeout(r, 100));
    expect(c.get('ghost')).toBeUndefined();
    expect(c.connected).toBe(true);
    expect(s.streamConnects).toBe(1);
  });

  it('reconnects with backoff after the server drops the stream and re-syncs from a fresh snapshot', async () => {
    const s = await stub();
    s.reset([backend('a'), backend('b')], 1);
    const c = client(s, { backoff: { initialMs: 200, maxMs: 400 } });
    await waitUntil(() => c.connected, 3000, 'first snapshot');
    s.reset([backend('b', { status: 'Paused' }), backend('c')], 50); // changed while the router is not watching
    const dropped = Date.now();
    s.dropStreams();
    await waitUntil(() => s.streamConnects === 2 && c.connected, 3000, 're-sync');
    expect(Date.now() - dropped).toBeGreaterThanOrEqual(100); // equal jitter: at least half the first step
    expect(c.revision).toBe(50);
    expect(
      c
        .backends()
        .map((b) => b.instanceId)
        .sort(),
    ).toEqual(['b', 'c']);
    expect(c.get('b')?.status).toBe('Paused');
  });

  it('treats a revision gap or a malformed event as lost sync: reconnects and re-syncs', async () => {
    const s = await stub();
    s.reset([backend('a')], 1);
    const c = client(s);
    await waitUntil(() => c.connected, 3000, 'snapshot');
    s.broadcast(formatSseEvent('upsert', { revision: 3, backend: backend('skipped-2') }));
    await waitUntil(() => s.streamConnects === 2 && c.connected, 3000, 'resync after gap');
    expect(c.get('skipped-2')).toBeUndefined();
    s.broadcast('event: upsert\ndata: {"revision": 2, "backend": {"instanceId": "x"}}\n\n');
    await waitUntil(() => s.streamConnects === 3 && c.connected, 3000, 'resync after a bad event');
    expect(c.get('x')).toBeUndefined();
  });

  it('keeps serving the last snapshot while the orchestrator is unreachable, retrying with capped backoff, then re-syncs', async () => {
    const s = await stub();
    s.reset([backend('lobby-1', { address: '127.0.0.1:1000' })], 4);
    const c = client(s, { backoff: { initialMs: 20, maxMs: 80 } });
    await waitUntil(() => c.connected, 3000, 'snapshot');
    await s.stop();
    await waitUntil(() => !c.connected, 3000, 'disconnect noticed');
    await new Promise((r) => setTimeout(r, 400)); // several failed attempts (≤ 80 ms apart)
    expect(c.synced).toBe(true);
    expect(c.get('lobby-1')?.address).toBe('127.0.0.1:1000');
    s.reset([backend('lobby-2')], 0);
    await s.start();
    await waitUntil(() => c.connected, 3000, 're-sync after the orchestrator returned');
    expect(c.backends().map((b) => b.instanceId)).toEqual(['lobby-2']);
    expect(c.revision).toBe(0); // a restarted orchestrator may count from anywhere: snapshots always win
  });

  it('treats silence longer than the idle timeout as a dead stream', async () => {
    const s = await stub(60_000); // no keepalives
    const c = client(s, { idleTimeoutMs: 150 });
    await waitUntil(() => s.streamConnects >= 3, 3000, 'reconnects after silence');
    expect(c.synced).toBe(true);
  });

  it('does not sync with a wrong token and keeps retrying', async () => {
    const s = await stub();
    const c = client(s, { token: 'wrong' });
    await new Promise((r) => setTimeout(r, 300));
    expect(c.synced).toBe(false);
    expect(s.streamConnects).toBe(0);
  });
});

describe('stream parsing and backoff', () => {
  it('parses events split anywhere, with CRLF, comments and multi-line data', () => {
    const p = new SseParser();
    const text = ': keepalive\r\n\r\nevent: upsert\r\ndata: {"a":\r\ndata: 1}\r\n\r\ndata: plain\n\n';
    const events = [...text].flatMap((ch) => p.push(ch));
    expect(events).toEqual([
      { event: 'upsert', data: '{"a":\n1}' },
      { event: 'message', data: 'plain' },
    ]);
  });

  it('grows exponentially with jitter and never exceeds the cap', () => {
    const policy = { initialMs: 100, maxMs: 1000 };
    expect(backoffDelay(1, policy, () => 0)).toBe(50);
    expect(backoffDelay(1, policy, () => 1)).toBe(100);
    expect(backoffDelay(3, policy, () => 1)).toBe(400);
    expect(backoffDelay(50, policy, () => 1)).toBe(1000);
    expect(backoffDelay(50, policy, () => 0)).toBe(500);
  });
});
