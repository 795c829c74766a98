// The agent driver over the keep-alive node:http transport, on real sockets on
// 127.0.0.1: sequential calls share one socket, the pool's bound holds, a kept
// socket the server closed is retried once for a GET and never for a POST,
// timeouts and aborts fail as before, bodies stream both ways (through the
// real agent app), and https control URLs use Node's trust store.

import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { AgentHostDriver } from '../../src/server/drivers/agent-driver.js';
import { HttpAgentTransport, readText } from '../../src/server/drivers/agent-transport.js';
import type { DriverHost } from '../../src/server/drivers/host-driver.js';
import { errorOf, layerArchive, startFakeAgent } from './support.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

interface Local {
  host: DriverHost;
  /** TCP connections accepted so far. */
  connections: () => number;
  /** Requests seen, as "METHOD path". */
  requests: string[];
}

/** A local HTTP server; `handle` answers each request (its socket's request count given). */
async function localAgent(handle: (req: IncomingMessage, res: ServerResponse, nth: number) => void): Promise<Local> {
  const sockets = new Set<Socket>();
  const perSocket = new WeakMap<Socket, number>();
  let connections = 0;
  const requests: string[] = [];
  const server: Server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const nth = (perSocket.get(req.socket) ?? 0) + 1;
    perSocket.set(req.socket, nth);
    handle(req, res, nth);
  });
  server.keepAliveTimeout = 72_000;
  server.on('connection', (socket: Socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return {
    host: { id: 'h', controlUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}` },
    connections: () => connections,
    requests,
  };
}

const inventoryJson = (res: ServerResponse): void =>
  void res.writeHead(200, { 'content-type': 'application/json' }).end('{"instances":[]}');

function transport(options: ConstructorParameters<typeof HttpAgentTransport>[0] = {}): HttpAgentTransport {
  const t = new HttpAgentTransport(options);
  cleanups.push(() => t.close());
  return t;
}

describe('HttpAgentTransport under the agent driver', () => {
  it('sends sequential calls over one kept socket', async () => {
    const agent = await localAgent((req, res) => {
      req.resume();
      req.on('end', () => inventoryJson(res));
    });
    const driver = new AgentHostDriver({ transport: transport(), token: 't'.repeat(16), timeoutMs: 5000, epoch: { epoch: () => 1 } });
    for (let i = 0; i < 10; i++) await driver.inventory(agent.host);
    await driver.start(agent.host, 'i-1').catch(() => undefined);
    await driver.remove(agent.host, 'i-1', { paths: ['a'] }).catch(() => undefined);
    expect(agent.requests).toHaveLength(12);
    expect(agent.connections()).toBe(1);
  });

  it('opens at most maxSocketsPerHost sockets; more calls wait for a free one', async () => {
    const agent = await localAgent((_req, res) => void setTimeout(() => inventoryJson(res), 50));
    const driver = new AgentHostDriver({
      transport: transport({ maxSocketsPerHost: 2 }),
      token: undefined,
      timeoutMs: 5000,
      epoch: { epoch: () => 1 },
    });
    await Promise.all(Array.from({ length: 6 }, () => driver.inventory(agent.host)));
    expect(agent.requests).toHaveLength(6);
    expect(agent.connections()).toBe(2);
  });

  it('refuses bad pool options with the option named', () => {
    for (const [options, message] of [
      [{ maxSocketsPerHost: 0 }, /maxSocketsPerHost must be a positive integer, got 0/],
      [{ maxSocketsPerHost: 1.5 }, /maxSocketsPerHost/],
      [{ freeSocketTimeoutMs: 0 }, /freeSocketTimeoutMs must be a positive integer \(ms\), got 0/],
      [{ freeSocketTimeoutMs: Number.NaN }, /freeSocketTimeoutMs/],
    ] as const)
      expect(() => new HttpAgentTransport(options)).toThrow(message);
  });

  it('drops an idle socket after freeSocketTimeoutMs and opens a new one; a slower call keeps its socket', async () => {
    let delayMs = 0;
    const agent = await localAgent((_req, res) => void setTimeout(() => inventoryJson(res), delayMs));
    const driver = new AgentHostDriver({
      transport: transport({ freeSocketTimeoutMs: 100 }),
      token: undefined,
      timeoutMs: 5000,
      epoch: { epoch: () => 1 },
    });
    await driver.inventory(agent.host);
    await new Promise((r) => setTimeout(r, 300));
    await driver.inventory(agent.host);
    expect(agent.connections()).toBe(2);
    delayMs = 300;
    expect(await driver.inventory(agent.host)).toEqual([]);
    expect(agent.connections()).toBe(2);
  });

  it('sends a GET again once on a fresh socket when the kept one was closed under it; never a POST', async () => {
    // The second request on any socket finds it closed by the server (the keep-alive race).
    const agent = await localAgent((req, res, nth) => {
      if (nth > 1) return void req.socket.destroy();
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{"instances":[],"state":"running"}'));
    });
    const driver = new AgentHostDriver({ transport: transport(), token: undefined, timeoutMs: 5000, epoch: { epoch: () => 1 } });
    await driver.inventory(agent.host);
    expect(await driver.inventory(agent.host)).toEqual([]);
    expect(agent.requests).toEqual(['GET /api/v1/instances', 'GET /api/v1/instances', 'GET /api/v1/instances']);
    expect(agent.connections()).toBe(2);

    // The second socket is kept now: a POST on it is not repeated.
    const refused = await errorOf(driver.start(agent.host, 'i-1'));
    expect(refused).toMatchObject({ code: 'HOST_UNAVAILABLE', retryable: true });
    expect(refused.message).toMatch(/^agent at http:\/\/127\.0\.0\.1:\d+ is unreachable \(socket hang up\)$/);
    expect(agent.requests.filter((r) => r.startsWith('POST'))).toEqual(['POST /api/v1/instances/i-1/start']);
  });

  it('does not repeat a GET whose fresh socket was closed (the agent, not the race)', async () => {
    const agent = await localAgent((req) => void req.socket.destroy());
    const driver = new AgentHostDriver({ transport: transport(), token: undefined, timeoutMs: 5000, epoch: { epoch: () => 1 } });
    expect(await errorOf(driver.inventory(agent.host))).toMatchObject({ code: 'HOST_UNAVAILABLE', retryable: true });
    expect(agent.requests).toHaveLength(1);
  });

  it('times out with the same retryable TIMEOUT, before the head and while the body is late', async () => {
    const silent = await localAgent(() => undefined);
    const driver = new AgentHostDriver({ transport: transport(), token: undefined, timeoutMs: 150, epoch: { epoch: () => 1 } });
    const head = await errorOf(driver.inventory(silent.host));
    expect(head).toMatchObject({ code: 'TIMEOUT', retryable: true });
    expect(head.message).toBe(`agent at ${silent.host.controlUrl} did not answer GET /instances within 150 ms`);

    const halfBody = await localAgent(
      (_req, res) => void res.writeHead(200, { 'content-type': 'application/json' }).write('{"instances":'),
    );
    const body = await errorOf(driver.inventory(halfBody.host));
    expect(body).toMatchObject({ code: 'TIMEOUT', retryable: true });
    expect(body.message).toContain('did not answer GET /instances within 150 ms');
  });

  it('aborts: the request is closed on the agent and the send rejects with an AbortError', async () => {
    let closed = false;
    const agent = await localAgent((req) => void req.socket.on('close', () => (closed = true)));
    const controller = new AbortController();
    const sent = transport().send({
      method: 'GET',
      url: new URL(`${agent.host.controlUrl}/api/v1/instances`),
      headers: {},
      signal: controller.signal,
    });
    await new Promise((r) => setTimeout(r, 50));
    controller.abort();
    await expect(sent).rejects.toMatchObject({ name: 'AbortError' });
    await new Promise((r) => setTimeout(r, 50));
    expect(closed).toBe(true);

    // After the head, aborting ends the body's reader.
    const streaming = await localAgent((_req, res) => void res.writeHead(200).write('part'));
    const later = new AbortController();
    const answer = await transport().send({
      method: 'GET',
      url: new URL(`${streaming.host.controlUrl}/x`),
      headers: {},
      signal: later.signal,
    });
    const text = readText(answer.body);
    later.abort();
    await expect(text).rejects.toThrow();
  });

  it('streams an upload chunked and a download as it comes', async () => {
    const chunks = Array.from({ length: 64 }, (_, i) => Buffer.alloc(16 * 1024, i));
    const whole = Buffer.concat(chunks);
    let received: { encoding: string | undefined; type: string | undefined; sha: string } | undefined;
    const agent = await localAgent((req, res) => {
      if (req.method === 'PUT') {
        const hash = createHash('sha256');
        req.on('data', (c: Buffer) => hash.update(c));
        req.on('end', () => {
          received = { encoding: req.headers['transfer-encoding'], type: req.headers['content-type'], sha: hash.digest('hex') };
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"instanceId":"i-1","path":"","files":1}');
        });
        return;
      }
      res.writeHead(200, {
        'content-type': 'application/gzip',
        'content-length': String(whole.length),
        'x-backup-sha256': 'f'.repeat(64),
        'x-backup-created-at': '2026-01-01T00:00:00.000Z',
      });
      let i = 0;
      const next = (): void => {
        if (i === chunks.length) return void res.end();
        res.write(chunks[i++]);
        setTimeout(next, 1);
      };
      next();
    });
    const driver = new AgentHostDriver({ transport: transport(), token: undefined, timeoutMs: 5000, epoch: { epoch: () => 1 } });
    await driver.dataImport.importData(agent.host, 'i-1', '', Readable.from(chunks));
    expect(received).toEqual({ encoding: 'chunked', type: 'application/gzip', sha: createHash('sha256').update(whole).digest('hex') });

    const { info, stream } = await driver.backups.download(agent.host, 'i-1', 'b-1');
    expect(info).toMatchObject({ backupId: 'b-1', sizeBytes: whole.length, sha256: 'f'.repeat(64), createdAt: '2026-01-01T00:00:00.000Z' });
    const got: Buffer[] = [];
    for await (const c of stream) got.push(c as Buffer);
    expect(Buffer.concat(got).equals(whole)).toBe(true);
  });

  it('fails an upload whose stream fails, and a download refused by the agent, as before', async () => {
    const agent = await localAgent((req, res) => {
      req.resume();
      if (req.method === 'GET')
        return void res
          .writeHead(404, { 'content-type': 'application/json' })
          .end('{"error":{"code":"NOT_FOUND","message":"no backup b-9"}}');
    });
    const driver = new AgentHostDriver({ transport: transport(), token: undefined, timeoutMs: 5000, epoch: { epoch: () => 1 } });
    const broken = new Readable({
      read() {
        this.destroy(new Error('disk read failed'));
      },
    });
    const upload = await errorOf(driver.dataImport.importData(agent.host, 'i-1', '', broken));
    expect(upload).toMatchObject({ code: 'HOST_UNAVAILABLE', retryable: true });
    expect(upload.message).toContain('disk read failed');
    const missing = await errorOf(driver.backups.download(agent.host, 'i-1', 'b-9'));
    expect(missing).toMatchObject({ code: 'NOT_FOUND', retryable: false });
    expect(missing.message).toContain('refused GET /instances/i-1/backups/b-9/archive: no backup b-9');
  });

  it('round-trips a backup archive through the real agent app (download, then upload as another backup)', async () => {
    const agent = await startFakeAgent();
    cleanups.push(() => agent.close());
    const host: DriverHost = { id: 'a', controlUrl: agent.url };
    const driver = new AgentHostDriver({ transport: transport(), token: undefined, timeoutMs: 5000, epoch: { epoch: () => 1 } });
    await driver.create(host, 'i-1', {
      groupId: 'g',
      variantId: 'v',
      image: 'mc:1',
      layers: [],
      resources: { memoryMb: 256 },
      env: {},
      start: false,
    });
    await driver.dataImport.importData(host, 'i-1', '', Readable.from(await layerArchive({ 'world/level.dat': 'x'.repeat(100_000) })));
    const made = await driver.backups.create(host, 'i-1', { backupId: 'b-1' });
    const { info, stream } = await driver.backups.download(host, 'i-1', 'b-1');
    expect(info).toMatchObject({ backupId: 'b-1', sha256: made.sha256, sizeBytes: made.sizeBytes });
    const archive: Buffer[] = [];
    for await (const c of stream) archive.push(c as Buffer);
    expect(createHash('sha256').update(Buffer.concat(archive)).digest('hex')).toBe(made.sha256);
    await driver.backups.upload(host, 'i-1', { ...info, backupId: 'b-2' }, Readable.from(archive));
    expect((await driver.backups.list(host, 'i-1')).map((b) => b.backupId).sort()).toEqual(['b-1', 'b-2']);
  });
});

const opensslAvailable = ((): boolean => {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!opensslAvailable)('https control URLs', () => {
  /** A self-signed certificate for 127.0.0.1 and an https agent answering inventories. */
  async function httpsAgent(): Promise<{ url: string; certFile: string; connections: () => number }> {
    const dir = mkdtempSync(join(tmpdir(), 'ec-agent-tls-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const keyFile = join(dir, 'key.pem');
    const certFile = join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        keyFile,
        '-out',
        certFile,
      ],
      { stdio: 'ignore' },
    );
    let connections = 0;
    const server = createHttpsServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, (_req, res) => inventoryJson(res));
    server.on('secureConnection', () => void (connections += 1));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    return { url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`, certFile, connections: () => connections };
  }

  it('refuses an agent certificate Node does not trust, saying why', async () => {
    const agent = await httpsAgent();
    const driver = new AgentHostDriver({ transport: transport(), token: undefined, timeoutMs: 5000, epoch: { epoch: () => 1 } });
    const err = await errorOf(driver.inventory({ id: 'h', controlUrl: agent.url }));
    expect(err).toMatchObject({ code: 'HOST_UNAVAILABLE', retryable: true });
    expect(err.message).toBe(`agent at ${agent.url} is unreachable (self-signed certificate)`);
  });

  it('calls an agent whose CA is given with NODE_EXTRA_CA_CERTS, over one kept TLS connection', async () => {
    const agent = await httpsAgent();
    const script = join(agent.certFile, '..', 'call.mts');
    const driverModule = fileURLToPath(new URL('../../src/server/drivers/agent-driver.ts', import.meta.url));
    writeFileSync(
      script,
      [
        `import { AgentHostDriver } from ${JSON.stringify(driverModule)};`,
        'const driver = new AgentHostDriver({ token: undefined, timeoutMs: 5000, epoch: { epoch: () => 1 } });',
        `const host = { id: 'h', controlUrl: ${JSON.stringify(agent.url)} };`,
        'for (let i = 0; i < 3; i++) console.log(JSON.stringify(await driver.inventory(host)));',
      ].join('\n'),
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], {
      env: { ...process.env, NODE_EXTRA_CA_CERTS: agent.certFile },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let errOut = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (errOut += b.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect({ code, errOut }).toEqual({ code: 0, errOut: '' });
    expect(out).toBe('[]\n[]\n[]\n');
    expect(agent.connections()).toBe(1);
  }, 30_000);
});
