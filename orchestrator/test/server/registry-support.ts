// Registry and transfer route-test support: seed a host, template, group and
// instances straight into the store, make scoped tokens, read an SSE stream
// with the router's own parser, and a tiny agent that answers RCON calls.

import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Instance, InstanceState } from '../../src/domain/index.js';
import { SseParser, type SseEvent } from '../../src/router/registry-client.js';
import { group, heartbeat, instance, templateSpec, templateVersion } from '../store/fixtures.js';
import type { Loose, TestOrchestrator } from './support.js';

export interface Seeded {
  hostId: string;
  add(id: string, state: InstanceState, overrides?: Partial<Omit<Instance, 'version'>>): Promise<Instance>;
}

/** An ONLINE host whose agent is at `controlUrl`, template paper@1.0.0 (RCON declared), group g1. */
export async function seed(t: TestOrchestrator, controlUrl = 'http://127.0.0.1:9/agent', hostId = 'h1'): Promise<Seeded> {
  const store = t.o.store;
  const now = t.clock.now();
  await store.hosts.upsertHeartbeat(heartbeat(hostId, { controlUrl }), now);
  await store.hosts.setStatus(hostId, 'ONLINE', { now });
  if (!(await store.templates.get('paper', '1.0.0'))) await store.templates.create(templateVersion('paper', '1.0.0', templateSpec()));
  if (!(await store.groups.get('g1'))) await store.groups.put(group('g1'));
  return {
    hostId,
    add: (id, state, overrides = {}) =>
      store.instances.create(
        instance(id, {
          name: id,
          hostId,
          state,
          stateChangedAt: now,
          endpoint: { host: '127.0.0.1', port: 30000 + Math.floor(Math.random() * 99) },
          containerConfig: { ...instance(id).containerConfig, env: { EULA: 'TRUE', ACCEPTS_TRANSFERS: 'true' } },
          ...overrides,
        }),
      ),
  };
}

export async function tokenWith(t: TestOrchestrator, name: string, scopes: string[]): Promise<string> {
  const res = await t.call('POST', '/api/v1/tokens', { body: { name, scopes } });
  if (res.status !== 201) throw new Error(`token create answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body.secret as string;
}

export interface SseReader {
  status: number;
  headers: Headers;
  /** Raw text so far (comments included). */
  text(): string;
  /** Waits until `n` events arrived; returns them all. */
  events(n: number, timeoutMs?: number): Promise<Array<SseEvent & { json: Loose }>>;
  /** Resolves when the server ends the stream. */
  ended: Promise<void>;
  close(): void;
}

export async function openStream(url: string, token: string | undefined): Promise<SseReader> {
  const controller = new AbortController();
  const res = await fetch(url, { headers: token ? { authorization: `Bearer ${token}` } : {}, signal: controller.signal });
  const parser = new SseParser();
  const got: Array<SseEvent & { json: Loose }> = [];
  let raw = '';
  const ended = (async () => {
    if (!res.body) return;
    const decoder = new TextDecoder();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const text = decoder.decode(chunk, { stream: true });
        raw += text;
        for (const e of parser.push(text)) got.push({ ...e, json: JSON.parse(e.data) });
      }
    } catch {
      // aborted by close()
    }
  })();
  return {
    status: res.status,
    headers: res.headers,
    text: () => raw,
    async events(n, timeoutMs = 5000) {
      const deadline = Date.now() + timeoutMs;
      while (got.length < n) {
        if (Date.now() > deadline)
          throw new Error(`only ${got.length} of ${n} events within ${timeoutMs} ms: ${JSON.stringify(got.map((e) => e.event))}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      return got.slice();
    },
    ended,
    close: () => controller.abort(),
  };
}

export interface RconAgent {
  url: string;
  calls: Array<{ instanceId: string; body: { port: number; password: string; command: string } }>;
  /** What the "server" answers; default mimics the test server. */
  answer: (command: string) => { status: number; body: unknown };
  close(): Promise<void>;
}

export async function startRconAgent(): Promise<RconAgent> {
  const agent: RconAgent = {
    url: '',
    calls: [],
    answer: (command) => ({
      status: 200,
      body: { response: `Transferring ${command.split(' ').pop()} to ${command.split(' ').slice(1, 3).join(':')}` },
    }),
    close: async () => undefined,
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const m = /^\/api\/v1\/instances\/([^/]+)\/rcon$/.exec(req.url ?? '');
      if (req.method !== 'POST' || !m) return void res.writeHead(404).end();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as RconAgent['calls'][number]['body'];
      agent.calls.push({ instanceId: decodeURIComponent(m[1]!), body });
      const a = agent.answer(body.command);
      res.writeHead(a.status, { 'content-type': 'application/json' }).end(JSON.stringify(a.body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  agent.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  agent.close = () =>
    new Promise<void>((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return agent;
}

export function sessionEvent(
  type: 'login' | 'denied' | 'disconnect',
  id: string,
  player: string,
  instanceId: string | null,
  extra: Record<string, unknown> = {},
) {
  return { type, id, player, uuid: null, instanceId, backend: instanceId, at: new Date().toISOString(), ...extra };
}
