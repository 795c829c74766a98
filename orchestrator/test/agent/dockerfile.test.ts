// Builds the repository's Dockerfile on the real engine and runs the agent
// from the image. No registry is reachable here, so the base image is made
// locally: the test node image plus the host's npm and the host's npm cache;
// both `npm ci` runs use `--offline --ignore-scripts` (NPM_CI_FLAGS).
// Verified: the multi-stage build (npm ci, tsc to dist/, npm ci --omit=dev),
// the agent's command starting from the image and answering /health, and a
// bad variable stopping it with exit status 2 and one line naming it.
// Not verified here: the default node:20-bookworm-slim base and native
// install scripts (better-sqlite3), which need the internet. When the host's
// npm cache cannot satisfy an offline `npm ci`, the build test reports itself
// skipped (NOT RUN) instead of passing.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, relative } from 'node:path';
import { pack } from 'tar-stream';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { docker, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { ensureImage, imageTag, nodeImage, type ImageFile } from '../support/images.js';
import { freePort } from '../support/registry.js';

const RUN = uniqueId('dockerfile');
const LABEL = { 'endercloud.test-run': RUN };
const REPO = join(import.meta.dirname, '..', '..', '..');
const NPM_DIR = '/usr/lib/node_modules/npm';
const NPM_CACHE = join(homedir(), '.npm', '_cacache');
const canRun = existsSync(NPM_DIR) && existsSync(NPM_CACHE);
const builtTag = `endercloud-test/app:${RUN}`;

function walk(dir: string, skip: (rel: string) => boolean, root = dir, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    const rel = relative(root, full);
    if (skip(rel)) continue;
    const st = statSync(full);
    if (st.isDirectory()) walk(full, skip, root, out);
    else if (st.isFile()) out.push(rel);
  }
  return out;
}

const offlineNodeImage = {
  name: 'node-npm-offline',
  dockerfile: [
    `FROM ${imageTag(nodeImage)}`,
    'ENV HOME=/root',
    'COPY npm/ /usr/local/lib/node_modules/npm/',
    'COPY cacache/ /root/.npm/_cacache/',
    'RUN ["/bin/sh", "-c", "mkdir -p /usr/bin && ln -s /bin/busybox /usr/bin/env && ln -s /usr/local/lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s /usr/local/lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx"]',
  ].join('\n'),
  files: (): ImageFile[] => [
    ...walk(NPM_DIR, () => false).map((p) => ({ path: `npm/${p}`, from: join(NPM_DIR, p) })),
    ...walk(NPM_CACHE, (rel) => rel.startsWith('tmp')).map((p) => ({ path: `cacache/${p}`, from: join(NPM_CACHE, p) })),
  ],
};

/**
 * Locked packages an offline `npm ci` cannot get from the host's npm cache: a
 * tarball missing by integrity, or (for entries without `resolved`) a missing
 * registry document. Packages for other platforms are never fetched.
 */
function uncachedPackages(): string[] {
  type Entry = { integrity?: string; resolved?: string; os?: string[]; cpu?: string[] };
  const lock = JSON.parse(readFileSync(join(REPO, 'orchestrator', 'package-lock.json'), 'utf8')) as { packages: Record<string, Entry> };
  const cached = (dir: string, hex: string) => existsSync(join(NPM_CACHE, dir, hex.slice(0, 2), hex.slice(2, 4), hex.slice(4)));
  const missing: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    if (!entry.integrity || entry.os || entry.cpu) continue;
    const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
    const [algo, b64] = entry.integrity.split(' ')[0]!.split('-') as [string, string];
    const tarball = cached(join('content-v2', algo), Buffer.from(b64, 'base64').toString('hex'));
    const key = `make-fetch-happen:request-cache:https://registry.npmjs.org/${name.replace('/', '%2f')}`;
    const packument = entry.resolved !== undefined || cached('index-v5', createHash('sha256').update(key).digest('hex'));
    if (!tarball || !packument) missing.push(name);
  }
  return missing;
}

afterAll(async () => {
  await removeContainersByLabel(LABEL);
  await docker().getImage(builtTag).remove({ force: true }).catch(() => undefined);
});

describe.skipIf(!canRun)('Dockerfile (built on a locally made offline base)', () => {
  it('builds, runs the agent command, and refuses a bad variable with exit status 2', async (t) => {
    // No registry here: an offline npm ci needs every locked package in the host's npm cache.
    const missing = uncachedPackages();
    if (missing.length > 0) t.skip(`NOT RUN: the host npm cache lacks ${missing.length} locked packages (e.g. ${missing.slice(0, 3).join(', ')}) for an offline npm ci`);
    await ensureImage(nodeImage);
    const base = await ensureImage(offlineNodeImage);
    const ctx = pack();
    ctx.entry({ name: 'Dockerfile' }, readFileSync(join(REPO, 'Dockerfile')));
    const skip = (rel: string) => /^(node_modules|dist|data|\.test-cache)(\/|$)/.test(rel);
    for (const rel of walk(join(REPO, 'orchestrator'), skip)) {
      const full = join(REPO, 'orchestrator', rel);
      ctx.entry({ name: `orchestrator/${rel}`, mode: statSync(full).mode & 0o777 }, readFileSync(full));
    }
    ctx.finalize();
    const stream = await docker().buildImage(ctx as unknown as NodeJS.ReadableStream, {
      t: builtTag,
      rm: true,
      forcerm: true,
      buildargs: { BASE_IMAGE: base, NPM_CI_FLAGS: '--offline --ignore-scripts --no-audit --no-fund' },
    });
    const output = await new Promise<{ error?: string; stream?: string }[]>((resolve, reject) =>
      docker().modem.followProgress(stream, (err: Error | null, res: { error?: string }[]) => (err ? reject(err) : resolve(res))),
    );
    const failure = output.find((o) => o.error);
    const log = output.map((o) => o.stream ?? '').join('');
    if (failure && log.includes('ENOTCACHED')) t.skip(`NOT RUN: offline npm ci in the build missed ${/request to (\S+)/.exec(log)?.[1] ?? 'a package'}`);
    expect(failure?.error, output.map((o) => o.stream ?? '').join('').slice(-3000)).toBeUndefined();

    const port = await freePort();
    const agent = await docker().createContainer({
      Image: builtTag,
      Cmd: ['node', 'dist/src/agent/index.js'],
      Labels: LABEL,
      Env: ['AGENT_ID=image-test', 'AGENT_ORCHESTRATOR_URL=http://127.0.0.1:9', 'AGENT_RUNTIME_DIRECTORY=/tmp/runtime', 'AGENT_CACHE_DIRECTORY=/tmp/cache', 'AGENT_LOG_LEVEL=warn'],
      ExposedPorts: { '8081/tcp': {} },
      HostConfig: { PortBindings: { '8081/tcp': [{ HostIp: '127.0.0.1', HostPort: String(port) }] } },
    });
    await agent.start();
    let health: Record<string, unknown> | undefined;
    for (let i = 0; i < 100 && !health; i++) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`);
        health = (await res.json()) as Record<string, unknown>;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(health).toMatchObject({ status: 'ok', agentId: 'image-test', version: '0.1.0' });

    const bad = await docker().createContainer({ Image: builtTag, Cmd: ['node', 'dist/src/agent/index.js'], Labels: LABEL, Env: ['AGENT_ID=x', 'AGENT_ORCHESTRATOR_URL=http://o', 'AGENT_HEARTBEAT_INTERVAL=10'] });
    await bad.start();
    const { StatusCode } = (await bad.wait()) as { StatusCode: number };
    expect(StatusCode).toBe(2);
    const logs = (await bad.logs({ stdout: true, stderr: true })).toString('utf8');
    expect(logs).toContain('AGENT_HEARTBEAT_INTERVAL');
  }, 900_000);
});

describe('Compose files', () => {
  it('parse as YAML, run the agent from the same image with the Docker socket mounted', () => {
    const root = parse(readFileSync(join(REPO, 'compose.yml'), 'utf8'));
    expect(root.services.agent.image).toBe(root.services.orchestrator.image);
    expect(root.services.agent.command).toEqual(['node', 'dist/src/agent/index.js']);
    expect(root.services.agent.volumes).toContain('/var/run/docker.sock:/var/run/docker.sock');
    const remote = parse(readFileSync(join(REPO, 'compose.agent.yml'), 'utf8'));
    expect(remote.services.agent.volumes).toContain('/var/run/docker.sock:/var/run/docker.sock');
    const example = readFileSync(join(REPO, '.env.agent.example'), 'utf8');
    for (const name of ['AGENT_ID', 'AGENT_ORCHESTRATOR_URL', 'AGENT_PUBLISH_ADDRESS', 'AGENT_TOKEN', 'AGENT_RUNTIME_LOCAL_DIRECTORY']) expect(example).toContain(`${name}=`);
  });
});
