// Builds the repository's Dockerfile on the real engine and runs the agent
// from the image. The base image is made locally (no Docker registry is
// reachable here): the test node image plus the host's npm, the host's CA
// bundle (npm reaches registry.npmjs.org through a TLS-intercepting proxy, so
// NPM_CONFIG_CAFILE points at it), and better-sqlite3's native binary — the
// host's own build, packed as the prebuild-install cache entry for this
// node ABI, because GitHub (where prebuilds come from) is not reachable and
// the base has no compiler. Everything else `npm ci` fetches from the registry.
// Verified: the multi-stage build (npm ci, tsc to dist/, npm ci --omit=dev),
// better-sqlite3 loading in the image, the agent's command answering /health,
// and a bad variable stopping it with exit status 2 and one line naming it.
// Not verified here: the default node:20-bookworm-slim base. When the npm
// registry cannot be reached at all, the test reports itself skipped (NOT RUN).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
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
const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
const SQLITE_DIR = join(REPO, 'orchestrator', 'node_modules', 'better-sqlite3');
const SQLITE_BINARY = join(SQLITE_DIR, 'build', 'Release', 'better_sqlite3.node');
const canRun = existsSync(NPM_DIR) && existsSync(CA_BUNDLE) && existsSync(SQLITE_BINARY);
const builtTag = `endercloud-test/app:${RUN}`;
const NETWORK_FAILURE = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|network request .* failed/i;

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

/**
 * better-sqlite3's prebuilt binary as prebuild-install caches it: the host's
 * build packed as `build/Release/better_sqlite3.node`, named after the GitHub
 * download URL (`<sha512(url)[0..6]>-<basename>`), so the install script
 * finds it in `~/.npm/_prebuilds` and never needs GitHub or a compiler.
 */
async function sqlitePrebuild(): Promise<{ name: string; bytes: Buffer }> {
  const version = (JSON.parse(readFileSync(join(SQLITE_DIR, 'package.json'), 'utf8')) as { version: string }).version;
  const file = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  const url = `https://github.com/WiseLibs/better-sqlite3/releases/download/v${version}/${file}`;
  const digest = createHash('sha512').update(url).digest('hex').slice(0, 6);
  // Fixed mtime and owner so the base image's content tag stays stable.
  const tar = pack();
  tar.entry({ name: 'build/Release/better_sqlite3.node', mode: 0o755, mtime: new Date(0), uid: 0, gid: 0 }, readFileSync(SQLITE_BINARY));
  tar.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of tar) chunks.push(chunk as Buffer);
  return { name: `${digest}-${file.replace(/[^a-zA-Z0-9.]+/g, '-')}`, bytes: gzipSync(Buffer.concat(chunks)) };
}

const prebuild = canRun ? await sqlitePrebuild() : undefined;

const npmNodeImage = {
  name: 'node-npm',
  dockerfile: [
    `FROM ${imageTag(nodeImage)}`,
    'ENV HOME=/root NPM_CONFIG_CAFILE=/etc/ssl/certs/ca-certificates.crt NPM_CONFIG_UPDATE_NOTIFIER=false',
    'COPY npm/ /usr/local/lib/node_modules/npm/',
    'COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt',
    `COPY prebuild.tar.gz /root/.npm/_prebuilds/${prebuild?.name ?? 'none'}`,
    'RUN ["/bin/sh", "-c", "mkdir -p /usr/bin && ln -s /bin/busybox /usr/bin/env && ln -s /usr/local/lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s /usr/local/lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx"]',
  ].join('\n'),
  files: (): ImageFile[] => [
    ...walk(NPM_DIR, () => false).map((p) => ({ path: `npm/${p}`, from: join(NPM_DIR, p) })),
    { path: 'ca-certificates.crt', from: CA_BUNDLE, mode: 0o644 },
    { path: 'prebuild.tar.gz', content: prebuild?.bytes ?? Buffer.alloc(0), mode: 0o644 },
  ],
};

afterAll(async () => {
  await removeContainersByLabel(LABEL);
  await docker().getImage(builtTag).remove({ force: true }).catch(() => undefined);
});

describe.skipIf(!canRun)('Dockerfile (built on a locally made base with the host\'s npm)', () => {
  it('builds, loads better-sqlite3, runs the agent command, and refuses a bad variable with exit status 2', async (t) => {
    await ensureImage(nodeImage);
    const base = await ensureImage(npmNodeImage);
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
      buildargs: { BASE_IMAGE: base, NPM_CI_FLAGS: '--no-audit --no-fund' },
    });
    const output = await new Promise<{ error?: string; stream?: string }[]>((resolve, reject) =>
      docker().modem.followProgress(stream, (err: Error | null, res: { error?: string }[]) => (err ? reject(err) : resolve(res))),
    );
    const failure = output.find((o) => o.error);
    const log = output.map((o) => o.stream ?? '').join('');
    if (failure && NETWORK_FAILURE.test(log)) t.skip(`NOT RUN: npm ci in the build could not reach the npm registry (${NETWORK_FAILURE.exec(log)?.[0]})`);
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
        const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`, { signal: AbortSignal.timeout(2000) });
        health = (await res.json()) as Record<string, unknown>;
      } catch {
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    expect(health).toMatchObject({ status: 'ok', agentId: 'image-test', version: '0.1.0' });

    // The native module the orchestrator's store needs loads in the image.
    const sqlite = await docker().createContainer({ Image: builtTag, Cmd: ['node', '-e', "const D = require('better-sqlite3'); process.exit(new D(':memory:').prepare('select 41 + 1 as x').get().x === 42 ? 0 : 1)"], Labels: LABEL });
    await sqlite.start();
    expect(((await sqlite.wait()) as { StatusCode: number }).StatusCode).toBe(0);

    const bad = await docker().createContainer({ Image: builtTag, Cmd: ['node', 'dist/src/agent/index.js'], Labels: LABEL, Env: ['AGENT_ID=x', 'AGENT_ORCHESTRATOR_URL=http://o', 'AGENT_HEARTBEAT_INTERVAL=10'] });
    await bad.start();
    const { StatusCode } = (await bad.wait()) as { StatusCode: number };
    expect(StatusCode).toBe(2);
    const logs = (await bad.logs({ stdout: true, stderr: true })).toString('utf8');
    expect(logs).toContain('AGENT_HEARTBEAT_INTERVAL');
  }, 300_000);
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
