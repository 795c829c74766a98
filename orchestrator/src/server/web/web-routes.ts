// The web panel (issue 14, docs/panel.md): the built single-page app at `/`
// (files from web/dist, index.html for every other non-API path, hashed
// assets cached for a year, CSP default-src 'self'), the session login/logout
// (`/api/v1/session`) and the one server-sent event stream of changes
// (`GET /api/v1/events`) the panel refetches from.

import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { LoginBody } from '../../contracts/public-api/bodies.js';
import { AppError } from '../../shared/errors.js';
import { assertSameSite } from '../auth/guard.js';
import { RESOURCES, type ScopeRequirement } from '../auth/scopes.js';
import type { Change, ChangePort } from '../changes/change-port.js';
import type { ServerContext } from '../context.js';
import { SESSION_COOKIE, type WebSessionService } from './web-sessions.js';

/** `<repo>/web/dist`, from src/server/web (tsx) and dist/src/server/web (compiled) alike. */
function defaultWebDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i += 1) {
    if (path.basename(dir) === 'orchestrator') return path.join(dir, '..', 'web', 'dist');
    dir = path.dirname(dir);
  }
  return path.resolve('..', 'web', 'dist');
}

/** Any reader: the event stream says only which row changed, never its content. */
export const PANEL_READ: ScopeRequirement = {
  scope: 'read',
  anyOf: ['admin', 'manager', 'operator', 'read', ...RESOURCES.flatMap((r) => [`${r}:read`, `${r}:write`])],
};

export const PANEL_CSP = "default-src 'self'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'; object-src 'none'";
const CHANGE_COALESCE_MS = 200;
const KEEPALIVE_MS = 15_000;

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
};

/** `Secure` when served over HTTPS, or when ENDERCLOUD_PUBLIC_URL is https (a TLS-terminating proxy in front). */
function sessionCookie(request: FastifyRequest, publicUrl: string | undefined, value: string, maxAgeSeconds: number): string {
  const secure = request.protocol === 'https' || publicUrl?.startsWith('https:') ? '; Secure' : '';
  return `${SESSION_COOKIE}=${value}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${maxAgeSeconds}${secure}`;
}

function principalView(p: { name: string; kind: string; scopes: readonly string[] }, via: string | undefined) {
  return { authenticated: true, name: p.name, kind: p.kind, scopes: [...p.scopes], via: via ?? 'bearer' };
}

export async function webRoutes(app: FastifyInstance, ctx: ServerContext, sessions: WebSessionService): Promise<void> {
  const webDir = path.resolve(ctx.config.webDir ?? defaultWebDir());
  const streams = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const end of [...streams]) end();
  });

  await app.register(
    async (api) => {
      api.post(
        '/session',
        {
          schema: {
            tags: ['panel'],
            summary: 'Panel login: exchange a token for an HttpOnly session cookie (needs x-endercloud-csrf: 1)',
            body: LoginBody,
          },
          config: { auth: { public: true }, authAttempt: true, audit: { action: 'session.login', targetKind: 'session' } },
        },
        async (req, reply) => {
          assertSameSite(req, sessions.publicOrigin);
          const { token } = req.body as LoginBody;
          const session = await sessions.login(token);
          if (!session) throw new AppError('UNAUTHORIZED', 'unknown or revoked token');
          req.principal = session.principal;
          return reply
            .header('set-cookie', sessionCookie(req, ctx.config.publicUrl, session.sessionId, Math.floor(sessions.ttlMs / 1000)))
            .header('cache-control', 'no-store')
            .send(principalView(session.principal, 'session'));
        },
      );

      api.get(
        '/session',
        {
          schema: {
            tags: ['panel'],
            summary:
              'Who is signed in: the principal name and scopes (the panel hides what they cannot do); {authenticated: false} without any credentials',
          },
          config: { auth: { authenticated: true, orAnonymous: true } },
        },
        async (req, reply) =>
          reply
            .header('cache-control', 'no-store')
            .send(req.principal ? principalView(req.principal, req.authVia) : { authenticated: false }),
      );

      api.delete(
        '/session',
        {
          schema: { tags: ['panel'], summary: 'Panel logout: ends the session and clears its cookie' },
          config: { auth: { authenticated: true }, audit: { action: 'session.logout', targetKind: 'session' } },
        },
        async (req, reply) => {
          const id = sessions.cookieOf(req);
          if (id !== undefined) await sessions.logout(id);
          return reply
            .header('set-cookie', sessionCookie(req, ctx.config.publicUrl, '', 0))
            .status(204)
            .send();
        },
      );

      api.get(
        '/events',
        {
          schema: {
            tags: ['panel'],
            summary:
              'Server-sent events: one `change` event {kind, id?} per changed instance, host, group, system setting or player count (coalesced)',
          },
          config: { auth: { scope: PANEL_READ } },
        },
        async (req, reply) => {
          streamChanges(req, reply, ctx.changes, streams);
        },
      );
    },
    { prefix: '/api/v1' },
  );

  const serve = async (req: FastifyRequest, reply: FastifyReply) => {
    const urlPath = decodeURIComponentSafe(req.url.split('?')[0] ?? '/');
    if (urlPath.startsWith('/api/') || urlPath === '/api' || urlPath === '/metrics') return reply.callNotFound();
    const security = (r: FastifyReply) =>
      r
        .header('content-security-policy', PANEL_CSP)
        .header('x-content-type-options', 'nosniff')
        .header('referrer-policy', 'no-referrer')
        .header('x-frame-options', 'DENY');
    const file = await staticFile(webDir, urlPath);
    if (file) {
      const immutable = urlPath.startsWith('/assets/');
      security(reply)
        .type(MIME[path.extname(file.path)] ?? 'application/octet-stream')
        .header('cache-control', immutable ? 'public, max-age=31536000, immutable' : 'no-cache')
        .header('content-length', String(file.size));
      return reply.send(createReadStream(file.path));
    }
    // A missing asset is a 404; any other path is a panel route: index.html (SPA fallback).
    if (urlPath.startsWith('/assets/') || path.extname(urlPath) !== '') return reply.callNotFound();
    const index = await staticFile(webDir, '/index.html');
    if (!index) {
      return security(reply)
        .status(503)
        .type('text/plain; charset=utf-8')
        .header('cache-control', 'no-store')
        .send(
          `The web panel is not built (no ${path.join(webDir, 'index.html')}).\nRun \`npm run build:web\` in orchestrator/ (npm ci does it when ../web exists). The API is at /api/v1.\n`,
        );
    }
    security(reply).type(MIME['.html']!).header('cache-control', 'no-cache').header('content-length', String(index.size));
    return reply.send(createReadStream(index.path));
  };
  const route = { schema: { hide: true }, config: { auth: { public: true as const } } };
  app.get('/', route, serve);
  app.get('/*', route, serve);
}

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}

/** A regular file below `root` (never outside it), or undefined. */
async function staticFile(root: string, urlPath: string): Promise<{ path: string; size: number } | undefined> {
  if (urlPath.includes('\0')) return undefined;
  const rel = urlPath === '/' ? 'index.html' : urlPath.replace(/^\/+/, '');
  const full = path.resolve(root, rel);
  if (full !== root && !full.startsWith(root + path.sep)) return undefined;
  const info = await stat(full).catch(() => undefined);
  return info?.isFile() ? { path: full, size: info.size } : undefined;
}

/** Holds the response open: `change` events, coalesced per kind and id; a comment line as keepalive. */
function streamChanges(req: FastifyRequest, reply: FastifyReply, changes: ChangePort, streams: Set<() => void>): void {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
    'x-request-id': String(req.id),
  });
  res.write('retry: 2000\n\nevent: ready\ndata: {}\n\n');
  const pending = new Map<string, Change>();
  let flush: NodeJS.Timeout | undefined;
  const send = () => {
    flush = undefined;
    for (const change of pending.values()) res.write(`event: change\ndata: ${JSON.stringify(change)}\n\n`);
    pending.clear();
  };
  const unsubscribe = changes.subscribe((change) => {
    pending.set(
      `${change.kind}:${change.id ?? ''}`,
      change.id === undefined ? { kind: change.kind } : { kind: change.kind, id: change.id },
    );
    flush ??= setTimeout(send, CHANGE_COALESCE_MS);
  });
  const keepalive = setInterval(() => res.write(': keepalive\n\n'), KEEPALIVE_MS);
  keepalive.unref();
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    unsubscribe();
    clearInterval(keepalive);
    if (flush) clearTimeout(flush);
    streams.delete(end);
    res.end();
  };
  streams.add(end);
  req.raw.on('close', end);
  res.on('error', end);
}
