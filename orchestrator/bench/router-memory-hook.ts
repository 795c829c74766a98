// Loaded into the benchmarked router only (`node --expose-gc --import <this>`, by
// bench/router-procs.ts), never into a deployed one: on the bench's IPC message
// `memory` it runs full garbage collections and answers with the process's
// memory, so idle connections are measured without the garbage that happens to
// be uncollected at that moment. Adds nothing else to the router.

import { readFileSync } from 'node:fs';

const gc = (globalThis as { gc?: () => void }).gc;

process.on('message', (m: unknown) => {
  if (m !== 'memory') return;
  // Twice: the first full GC can leave objects kept alive only by finalizers and weak callbacks.
  gc?.();
  gc?.();
  const u = process.memoryUsage();
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? 0);
  process.send?.({ rssKb, heapUsedKb: u.heapUsed / 1024, externalKb: u.external / 1024, collected: gc !== undefined });
});
// The IPC channel must not keep the router alive: it exits as it does without the bench.
(process.channel as { unref?: () => void } | undefined)?.unref?.();
