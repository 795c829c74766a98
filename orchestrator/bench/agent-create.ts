// Benchmark: warm-cache agent create-to-running vs a raw Engine API
// create+start of the same image (alternated, N each, one run), and layer
// materialization throughput of FsRuntimeDirectories vs `cp -a`.
//   npx tsx bench/agent-create.ts [N]
// Needs the Docker engine; builds the busybox test image if missing; cleans up.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsRuntimeDirectories } from '../src/agent/runtime-directories.js';
import { createTestAgent, removeNetwork, startFakeOrchestrator } from '../test/support/agent-harness.js';
import { docker, removeContainersByLabel, uniqueId } from '../test/support/docker.js';
import { busyboxImage, ensureImage } from '../test/support/images.js';

const N = Number(process.argv[2] ?? 10);
const RUN = uniqueId('bench');
const LABEL = { 'endercloud.bench-run': RUN };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function createBench(): Promise<void> {
  const image = await ensureImage(busyboxImage);
  const orch = await startFakeOrchestrator();
  const network = `ec-${RUN}`;
  const agentId = `${RUN}-agent`;
  const agent = await createTestAgent({ agentId, orchestratorUrl: orch.url, portRange: { first: 48000, last: 48099 }, network });
  try {
    const layer = await orch.addLayer('bench', { 'server.properties': { content: 'motd=bench\n' } });
    const payload = (i: number) => ({
      groupId: 'bench',
      variantId: 'v',
      image,
      layers: [layer],
      resources: { memoryMb: 64 },
      command: ['sleep', '3600'],
      env: { I: String(i) },
    });
    // Warm the layer cache, the image and the network.
    await agent.app.inject({ method: 'PUT', url: '/api/v1/instances/warm', payload: payload(0) });
    await agent.app.inject({ method: 'DELETE', url: '/api/v1/instances/warm' });
    const agentMs: number[] = [];
    const rawMs: number[] = [];
    for (let i = 1; i <= N; i++) {
      let t = performance.now();
      const res = await agent.app.inject({ method: 'PUT', url: `/api/v1/instances/b${i}`, payload: payload(i) });
      if (res.json().state !== 'running') throw new Error(`agent create failed: ${res.body}`);
      agentMs.push(performance.now() - t);
      await agent.app.inject({ method: 'DELETE', url: `/api/v1/instances/b${i}` });

      t = performance.now();
      const c = await docker().createContainer({
        name: `${RUN}-raw-${i}`,
        Image: image,
        Cmd: ['sleep', '3600'],
        Labels: LABEL,
        ExposedPorts: { '25565/tcp': {} },
        HostConfig: { PortBindings: { '25565/tcp': [{ HostIp: '127.0.0.1', HostPort: String(48200 + i) }] }, NetworkMode: network },
      });
      await c.start();
      rawMs.push(performance.now() - t);
      await c.remove({ force: true });
    }
    const a = median(agentMs);
    const r = median(rawMs);
    console.log(`create-to-running, warm cache, N=${N} each (alternated)`);
    console.log(`  agent PUT /instances/:id  median ${a.toFixed(1)} ms`);
    console.log(`  raw Engine create+start   median ${r.toFixed(1)} ms`);
    console.log(`  ratio agent/raw           ${(a / r).toFixed(2)} (goal <= 1.25)`);
  } finally {
    await removeContainersByLabel({ 'orchestrator.host': agentId });
    await removeContainersByLabel(LABEL);
    await agent.close();
    await removeNetwork(network);
    await orch.close();
  }
}

async function materializeBench(): Promise<void> {
  const base = mkdtempSync(join(tmpdir(), 'ec-bench-mat-'));
  try {
    const layer = join(base, 'layer');
    let bytes = 0;
    for (let d = 0; d < 30; d++) {
      mkdirSync(join(layer, `dir-${d}`), { recursive: true });
      for (let f = 0; f < 100; f++) {
        const content = Buffer.alloc(1024 + ((d * 100 + f) % 4096), 97);
        writeFileSync(join(layer, `dir-${d}`, `f-${f}.txt`), content);
        bytes += content.length;
      }
    }
    for (let i = 0; i < 4; i++) {
      const big = Buffer.alloc(16 * 1024 * 1024, i);
      writeFileSync(join(layer, `world-${i}.bin`), big);
      bytes += big.length;
    }
    const runtimeDirectory = join(base, 'runtime');
    mkdirSync(runtimeDirectory);
    const dirs = new FsRuntimeDirectories({ runtimeDirectory, runtimeHostDirectory: runtimeDirectory });
    const ours: number[] = [];
    const cp: number[] = [];
    for (let i = 0; i < 3; i++) {
      let t = performance.now();
      await dirs.materialize(`m${i}`, [layer]);
      ours.push(performance.now() - t);
      await dirs.remove(`m${i}`);
      t = performance.now();
      execFileSync('cp', ['-a', layer, join(base, `cp-${i}`)]);
      cp.push(performance.now() - t);
      rmSync(join(base, `cp-${i}`), { recursive: true, force: true });
    }
    const mb = bytes / 1024 / 1024;
    const rate = (ms: number) => (mb / (ms / 1000)).toFixed(1);
    console.log(`materialization of ${mb.toFixed(1)} MiB in 3004 files (median of 3)`);
    console.log(`  FsRuntimeDirectories.materialize  ${rate(median(ours))} MiB/s (${median(ours).toFixed(0)} ms)`);
    console.log(`  cp -a                             ${rate(median(cp))} MiB/s (${median(cp).toFixed(0)} ms)`);
    console.log(`  ratio materialize/cp time         ${(median(ours) / median(cp)).toFixed(2)}`);
  } finally {
    rmSync(base, { recursive: true, force: true });
  }
}

await createBench();
await materializeBench();
