// The repository's own image (Dockerfile), built on a locally made base: the
// test node image plus the host's npm, the host's CA bundle (npm reaches
// registry.npmjs.org through a TLS-intercepting proxy here, so
// NPM_CONFIG_CAFILE points at it), and better-sqlite3's native binary — the
// host's own build, packed as the prebuild-install cache entry for this node
// ABI, because GitHub (where prebuilds come from) is not reachable and the base
// has no compiler. Everything else `npm ci` fetches from the npm registry.

import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { pack } from 'tar-stream';
import { docker } from './docker.js';
import { ensureImage, imageExists, imageTag, nodeImage, type ImageDefinition, type ImageFile } from './images.js';

export const REPO = join(import.meta.dirname, '..', '..', '..');
const NPM_DIR = '/usr/lib/node_modules/npm';
const CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
const SQLITE_DIR = join(REPO, 'orchestrator', 'node_modules', 'better-sqlite3');
const SQLITE_BINARY = join(SQLITE_DIR, 'build', 'Release', 'better_sqlite3.node');

/** Whether this machine has what the locally made base needs. */
export const canBuildAppImage = existsSync(NPM_DIR) && existsSync(CA_BUNDLE) && existsSync(SQLITE_BINARY);

/** Build failures that mean "the npm registry is unreachable", not "our Dockerfile is broken". */
export const NETWORK_FAILURE = /ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|network request .* failed/i;

export function walk(dir: string, skip: (rel: string) => boolean, root = dir, out: string[] = []): string[] {
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

/**
 * glibc libraries a Debian slim base has and the host's node binary does not link:
 * the web panel's build tools (rolldown, lightningcss native bindings) need librt.
 */
const EXTRA_LIBRARIES = ['/lib/x86_64-linux-gnu/librt.so.1', '/lib/x86_64-linux-gnu/libresolv.so.2'].filter((p) => existsSync(p));

async function npmNodeImage(): Promise<ImageDefinition> {
  const prebuild = await sqlitePrebuild();
  return {
    name: 'node-npm',
    dockerfile: [
      `FROM ${imageTag(nodeImage)}`,
      'ENV HOME=/root NPM_CONFIG_CAFILE=/etc/ssl/certs/ca-certificates.crt NPM_CONFIG_UPDATE_NOTIFIER=false',
      'COPY npm/ /usr/local/lib/node_modules/npm/',
      'COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt',
      ...(EXTRA_LIBRARIES.length > 0 ? ['COPY lib/ /'] : []),
      `COPY prebuild.tar.gz /root/.npm/_prebuilds/${prebuild.name}`,
      'RUN ["/bin/sh", "-c", "mkdir -p /usr/bin && ln -s /bin/busybox /usr/bin/env && ln -s /usr/local/lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm && ln -s /usr/local/lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx"]',
    ].join('\n'),
    files: (): ImageFile[] => [
      ...walk(NPM_DIR, () => false).map((p) => ({ path: `npm/${p}`, from: join(NPM_DIR, p) })),
      { path: 'ca-certificates.crt', from: CA_BUNDLE, mode: 0o644 },
      { path: 'prebuild.tar.gz', content: prebuild.bytes, mode: 0o644 },
      ...EXTRA_LIBRARIES.map((p) => ({ path: `lib${p}`, from: realpathSync(p), mode: 0o755 })),
    ],
  };
}

const APP_SKIP = (rel: string) => /^(node_modules|dist|data|test-output|\.test-cache)(\/|$)/.test(rel);

/** What the Dockerfile copies: the package and the web panel's sources, as repository-relative paths (sorted). */
function appSources(): string[] {
  return ['orchestrator', 'web']
    .filter((dir) => existsSync(join(REPO, dir)))
    .flatMap((dir) => walk(join(REPO, dir), APP_SKIP).map((rel) => `${dir}/${rel}`))
    .sort();
}

/** The app image's tag, addressed by the content of the Dockerfile and the package sources. */
export function appImageTag(): string {
  const hash = createHash('sha256').update(readFileSync(join(REPO, 'Dockerfile')));
  for (const rel of appSources()) hash.update(`\0${rel}\0`).update(readFileSync(join(REPO, rel)));
  return `endercloud-test/app:${hash.digest('hex').slice(0, 16)}`;
}

export interface AppImageBuild {
  tag: string;
  /** Set when the build failed; `networkFailure` tells whether the registry was unreachable. */
  error?: string;
  networkFailure: boolean;
  log: string;
}

/** Each source change makes a new app image: keep only the newest on this engine. */
async function removeOtherAppImages(keep: string): Promise<void> {
  const repo = keep.slice(0, keep.lastIndexOf(':'));
  const images = await docker().listImages({ filters: { reference: [repo] } });
  for (const image of images) {
    for (const t of image.RepoTags ?? []) {
      if (t !== keep)
        await docker()
          .getImage(t)
          .remove()
          .catch(() => undefined);
    }
  }
}

/**
 * Builds the repository's Dockerfile on the locally made base, tagged by
 * content (skipped when that tag exists, so a second run reuses it).
 */
export async function buildAppImage(): Promise<AppImageBuild> {
  const tag = appImageTag();
  if (await imageExists(tag)) return { tag, networkFailure: false, log: '' };
  await ensureImage(nodeImage);
  const base = await ensureImage(await npmNodeImage());
  const ctx = pack();
  ctx.entry({ name: 'Dockerfile' }, readFileSync(join(REPO, 'Dockerfile')));
  for (const rel of appSources()) {
    const full = join(REPO, rel);
    ctx.entry({ name: rel, mode: statSync(full).mode & 0o777 }, readFileSync(full));
  }
  ctx.finalize();
  const stream = await docker().buildImage(ctx as unknown as NodeJS.ReadableStream, {
    t: tag,
    rm: true,
    forcerm: true,
    buildargs: { BASE_IMAGE: base, NPM_CI_FLAGS: '--no-audit --no-fund' },
  });
  const output = await new Promise<{ error?: string; stream?: string }[]>((resolve, reject) =>
    docker().modem.followProgress(stream, (err: Error | null, res: { error?: string }[]) => (err ? reject(err) : resolve(res))),
  );
  const log = output.map((o) => o.stream ?? '').join('');
  const error = output.find((o) => o.error)?.error;
  if (!error) await removeOtherAppImages(tag);
  return { tag, error, networkFailure: error !== undefined && NETWORK_FAILURE.test(log), log };
}
