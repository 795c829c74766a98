// Diagnostic, not a benchmark (`npx tsx bench/router-heap.ts [sessions] [dir]`, default
// 2,000): what an idle logged-in session is made of in the router's JS heap. It
// starts a counting sink and the router as bench:router does (tsc output, or tsx with
// BENCH_ROUTER_RUNTIME=tsx), takes a
// heap snapshot (`--heapsnapshot-signal`, which collects garbage first) with no
// session and one with N idle sessions, and prints the difference per session by
// object type and constructor: bytes (self sizes) and objects. RSS is not printed:
// writing a snapshot grows it. Snapshots go to a temp dir, removed at the end, or
// to `dir` (kept there, for a closer look in Chrome's DevTools).

import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { until } from '../test/support/router-stack.js';
import { loginPreamble, startSink } from './router-data-path.js';
import { routerBenchConfig } from './bench-config.js';
import { startRouter, type Cleanup } from './router-procs.js';

const sessions = Number(process.argv[2] ?? 2000);
if (!Number.isInteger(sessions) || sessions < 1) throw new Error(`sessions: "${process.argv[2]}" must be a positive integer`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

/** Self bytes and object count per "type: constructor" (strings, code and numbers lumped by type). */
function tally(s: Snapshot): Map<string, [number, number]> {
  const fields = s.snapshot.meta.node_fields;
  const types = s.snapshot.meta.node_types[0];
  const [ti, ni, si] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f)) as [number, number, number];
  const out = new Map<string, [number, number]>();
  for (let i = 0; i < s.nodes.length; i += fields.length) {
    const type = types[s.nodes[i + ti]!]!;
    const lumped = /string|code|number/.test(type);
    const key = `${type}: ${lumped ? '' : s.strings[s.nodes[i + ni]!]!.slice(0, 50)}`;
    const e = out.get(key) ?? [0, 0];
    e[0] += s.nodes[i + si]!;
    e[1] += 1;
    out.set(key, e);
  }
  return out;
}

const cleanups: Cleanup[] = [];
const keep = process.argv[3];
const dir = keep ? resolve(keep) : mkdtempSync(join(tmpdir(), 'ec-router-heap-'));
mkdirSync(dir, { recursive: true });
try {
  const sink = await startSink({ mode: 'count' }, 2 * sessions + 100, cleanups);
  const router = await startRouter({ sink: sink.port, echo: sink.port }, 2 * sessions + 100, [
    '--heapsnapshot-signal=SIGUSR2',
    `--diagnostic-dir=${dir}`,
  ]);
  cleanups.push(() => router.stop());
  const snapshot = async (): Promise<Snapshot> => {
    const before = new Set(readdirSync(dir));
    process.kill(router.pid, 'SIGUSR2');
    let file = '';
    await until('heap snapshot', async () => Boolean((file = readdirSync(dir).find((f) => !before.has(f)) ?? '')), 60_000, 200);
    // Complete when it parses (Node writes it in pieces).
    for (let tries = 0; ; tries++) {
      await sleep(500);
      try {
        return JSON.parse(readFileSync(join(dir, file), 'utf8')) as Snapshot;
      } catch (err) {
        if (!(err instanceof SyntaxError) || tries >= 240) throw err;
      }
    }
  };
  await sleep(1000);
  await snapshot(); // warms the snapshot machinery; the baseline is the second
  const empty = tally(await snapshot());
  const { accepted } = await sink.stats();
  const sockets: Socket[] = [];
  cleanups.push(() => sockets.forEach((s) => s.destroy()));
  for (let i = 0; i < sessions; i += 250) {
    await Promise.all(
      Array.from(
        { length: Math.min(250, sessions - i) },
        (_, k) =>
          new Promise<void>((resolve, reject) => {
            const s = connect(
              { host: '127.0.0.1', port: router.ports.sink!, noDelay: true },
              () => (s.write(loginPreamble('bench.local', `P${i + k}`)), resolve()),
            );
            s.once('error', reject);
            sockets.push(s);
          }),
      ),
    );
  }
  await until(`${sessions} sessions at the sink`, async () => (await sink.stats()).accepted - accepted >= sessions, 60_000, 100);
  await sleep(2000);
  const full = tally(await snapshot());
  const rows = [...full].map(([k, [bytes, count]]) => {
    const [b0, c0] = empty.get(k) ?? [0, 0];
    return { k, bytes: (bytes - b0) / sessions, count: (count - c0) / sessions };
  });
  rows.sort((a, b) => b.bytes - a.bytes);
  const total = rows.reduce((a, r) => a + r.bytes, 0);
  process.stdout.write(
    `router heap per idle session (${sessions} sessions vs 0, snapshot self sizes, router run with ${routerBenchConfig.routerRuntime}): ${(total / 1024).toFixed(2)} KiB\n`,
  );
  for (const r of rows.slice(0, 25))
    process.stdout.write(`${r.bytes.toFixed(0).padStart(7)} B ${r.count.toFixed(2).padStart(6)} objects  ${r.k}\n`);
} finally {
  for (const c of cleanups.reverse()) await c();
  if (!keep) rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
