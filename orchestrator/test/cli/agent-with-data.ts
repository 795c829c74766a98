// Test support: the in-test agent of test/server/support.ts plus what it lacks
// for ectl's data commands — image inspection (for update plans) and backups
// (create, list, restore) — answered here; every other call is forwarded.

import { createHash } from 'node:crypto';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeAgent, type FakeAgent } from '../server/support.js';

export interface AgentWithData {
  url: string;
  fake: FakeAgent;
  backups: Map<string, { backupId: string; sizeBytes: number; sha256: string; createdAt: string }[]>;
  restores: { instanceId: string; backupId: string }[];
  close(): Promise<void>;
}

export async function startAgentWithData(): Promise<AgentWithData> {
  const fake = await startFakeAgent();
  const backups: AgentWithData['backups'] = new Map();
  const restores: AgentWithData['restores'] = [];
  const target = new URL(fake.url);
  const json = (res: import('node:http').ServerResponse, status: number, body: unknown) =>
    res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      const url = new URL(req.url ?? '/', 'http://x');
      const p = url.pathname.replace(/^\/api\/v1/, '');
      if (req.method === 'GET' && p === '/images/inspect') {
        const ref = url.searchParams.get('ref') ?? '';
        return json(res, 200, {
          ref,
          id: `sha256:${createHash('sha256').update(ref).digest('hex')}`,
          repoDigests: [],
          created: null,
          sizeBytes: 1000,
          user: null,
        });
      }
      const b = /^\/instances\/([^/]+)\/(backups|restore)$/.exec(p);
      if (b) {
        const id = decodeURIComponent(b[1]!);
        const list = backups.get(id) ?? [];
        backups.set(id, list);
        const body = raw.length ? (JSON.parse(raw.toString()) as { backupId?: string }) : {};
        if (req.method === 'GET' && b[2] === 'backups') return json(res, 200, { backups: list });
        if (req.method === 'POST' && b[2] === 'backups') {
          const info = { backupId: body.backupId!, sizeBytes: 4096, sha256: 'a'.repeat(64), createdAt: new Date().toISOString() };
          list.push(info);
          return json(res, 200, info);
        }
        if (req.method === 'POST' && b[2] === 'restore') {
          restores.push({ instanceId: id, backupId: body.backupId! });
          return json(res, 200, { restored: body.backupId, safetyBackupId: null });
        }
      }
      const fwd = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      fwd.on('error', () => json(res, 502, { error: { code: 'AGENT_UNREACHABLE', message: 'fake agent gone' } }));
      fwd.end(raw);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    fake,
    backups,
    restores,
    async close() {
      await new Promise((r) => server.close(r));
      await fake.close();
    },
  };
}
