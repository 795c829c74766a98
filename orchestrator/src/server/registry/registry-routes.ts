// GET /registry (snapshot) and GET /registry/stream (SSE: one `snapshot`, then
// `upsert`/`remove` with +1 revisions, a `: keepalive` comment every 15 s), as
// docs/router.md "Orchestrator contract" specifies.

import type { FastifyInstance } from 'fastify';
import {
  KEEPALIVE_INTERVAL_MS,
  REGISTRY_PATH,
  REGISTRY_STREAM_PATH,
  SSE_KEEPALIVE,
  formatSseEvent,
} from '../../protocol/registry-contract.js';
import type { Logger } from '../../shared/logger.js';
import type { ScopeRequirement } from '../auth/scopes.js';
import type { FeedEvent, RegistryFeed } from './registry-feed.js';

const API_PREFIX = '/api/v1';
/** The router, and read-only tools. */
export const REGISTRY_READ: ScopeRequirement = { scope: 'router', anyOf: ['admin', 'manager', 'operator', 'read', 'router'] };
/** A client this far behind is cut off; it resyncs from a fresh snapshot when it reconnects. */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;

export interface RegistryRouteOptions {
  feed: RegistryFeed;
  logger: Logger;
  keepaliveMs?: number;
}

const relative = (path: string): string => path.slice(API_PREFIX.length);

export async function registryRoutes(api: FastifyInstance, o: RegistryRouteOptions): Promise<void> {
  const streams = new Set<() => void>();
  // A hijacked stream never goes idle: end them all before the server closes, or close() waits forever.
  api.addHook('preClose', async () => {
    for (const end of [...streams]) end();
  });

  api.get(
    relative(REGISTRY_PATH),
    {
      schema: { tags: ['router'], summary: 'The routing registry: every routable instance at one revision' },
      config: { auth: { scope: REGISTRY_READ } },
    },
    async () => o.feed.snapshot(),
  );

  api.get(
    relative(REGISTRY_STREAM_PATH),
    {
      schema: { tags: ['router'], summary: 'Registry change stream (text/event-stream): snapshot, then upsert/remove' },
      config: { auth: { scope: REGISTRY_READ } },
    },
    async (request, reply) => {
      const raw = reply.raw;
      let sentRevision: number | null = null;
      const early: FeedEvent[] = [];
      let ended = false;
      const write = (text: string): void => {
        if (ended) return;
        raw.write(text);
        if (raw.writableLength > MAX_BUFFERED_BYTES) {
          request.log.warn({ buffered: raw.writableLength }, 'registry stream client too slow; closing it');
          end();
        }
      };
      const send = (e: FeedEvent): void => {
        if (sentRevision === null) return void early.push(e);
        if (e.revision <= sentRevision) return;
        write(
          e.kind === 'upsert'
            ? formatSseEvent('upsert', { revision: e.revision, backend: e.backend })
            : formatSseEvent('remove', { revision: e.revision, instanceId: e.instanceId }),
        );
      };
      const unsubscribe = o.feed.subscribe(send);
      const keepalive = setInterval(() => write(SSE_KEEPALIVE), o.keepaliveMs ?? KEEPALIVE_INTERVAL_MS);
      const end = (): void => {
        if (ended) return;
        ended = true;
        clearInterval(keepalive);
        unsubscribe();
        streams.delete(end);
        raw.end();
      };
      streams.add(end);
      raw.on('close', end);

      reply.hijack();
      raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache, no-transform',
        'x-accel-buffering': 'no',
        'x-request-id': request.id,
        connection: 'keep-alive',
      });
      try {
        await o.feed.refresh();
      } catch (err) {
        request.log.error({ err }, 'registry snapshot failed; closing the stream');
        end();
        return;
      }
      // Synchronous from here: the snapshot and the revision filter agree.
      const snapshot = o.feed.snapshotNow();
      write(formatSseEvent('snapshot', snapshot));
      sentRevision = snapshot.revision;
      for (const e of early.splice(0)) send(e);
    },
  );
}
