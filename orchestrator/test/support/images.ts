// Test images, built locally (no registry can be reached) and tagged by a hash
// of their content, so each is built once per content and reused across runs.
//
//   busybox — a static busybox (Debian busybox-static) in a FROM scratch image
//   node    — the host's node binary plus the libraries ldd lists, FROM scratch,
//             with busybox for a shell
//
// More images (the Minecraft-protocol test server) register through
// `defineImage` in their own support module.

import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { pack } from 'tar-stream';
import { docker } from './docker.js';

export interface ImageFile {
  /** Path inside the build context. */
  path: string;
  /** Host file to copy, or inline content. */
  from?: string;
  content?: string | Buffer;
  mode?: number;
}

export interface ImageDefinition {
  name: string;
  dockerfile: string;
  files: () => ImageFile[];
}

export const TEST_IMAGE_REPO = 'endercloud-test';

function fileBytes(f: ImageFile): Buffer {
  if (f.content !== undefined) return Buffer.isBuffer(f.content) ? f.content : Buffer.from(f.content);
  return readFileSync(f.from!);
}

function fileMode(f: ImageFile): number {
  if (f.mode !== undefined) return f.mode;
  return f.from ? statSync(f.from).mode & 0o777 : 0o644;
}

const tagCache = new Map<string, string>();

/** The content-addressed tag of an image definition: endercloud-test/<name>:<hash>. */
export function imageTag(def: ImageDefinition): string {
  const cached = tagCache.get(def.name);
  if (cached) return cached;
  const hash = createHash('sha256').update(def.dockerfile);
  for (const f of def.files().sort((a, b) => a.path.localeCompare(b.path))) {
    hash.update(`\0${f.path}\0${fileMode(f)}\0`);
    hash.update(fileBytes(f));
  }
  const tag = `${TEST_IMAGE_REPO}/${def.name}:${hash.digest('hex').slice(0, 16)}`;
  tagCache.set(def.name, tag);
  return tag;
}

export async function imageExists(tag: string): Promise<boolean> {
  try {
    await docker().getImage(tag).inspect();
    return true;
  } catch {
    return false;
  }
}

/** Builds the image unless an image with the same content tag already exists. */
export async function ensureImage(def: ImageDefinition): Promise<string> {
  const tag = imageTag(def);
  if (await imageExists(tag)) return tag;
  const ctx = pack();
  ctx.entry({ name: 'Dockerfile', mode: 0o644 }, def.dockerfile);
  for (const f of def.files()) ctx.entry({ name: f.path, mode: fileMode(f) }, fileBytes(f));
  ctx.finalize();
  const stream = await docker().buildImage(ctx as unknown as NodeJS.ReadableStream, { t: tag, rm: true, forcerm: true });
  const output = await new Promise<unknown[]>((resolve, reject) =>
    docker().modem.followProgress(stream, (err, res) => (err ? reject(err) : resolve(res))),
  );
  const failure = output.find((o) => (o as { error?: string }).error) as { error?: string } | undefined;
  if (failure) throw new Error(`building ${tag} failed: ${failure.error}`);
  return tag;
}

const BUSYBOX = '/bin/busybox';

export const busyboxImage: ImageDefinition = {
  name: 'busybox',
  dockerfile: [
    'FROM scratch',
    'COPY busybox /bin/busybox',
    'RUN ["/bin/busybox", "--install", "-s", "/bin"]',
    'CMD ["/bin/sh"]',
  ].join('\n'),
  files: () => [{ path: 'busybox', from: BUSYBOX, mode: 0o755 }],
};

/** The libraries `ldd` lists for a binary, as absolute paths (symlinks resolved). */
export function sharedLibraries(binary: string): { path: string; real: string }[] {
  const out = execFileSync('ldd', [binary], { encoding: 'utf8' });
  const libs: { path: string; real: string }[] = [];
  for (const line of out.split('\n')) {
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line);
    if (m) libs.push({ path: m[1]!, real: realpathSync(m[1]!) });
  }
  return libs;
}

export const NODE_BINARY = realpathSync(process.execPath);

export const nodeImage: ImageDefinition = {
  name: 'node',
  dockerfile: [
    'FROM scratch',
    'COPY rootfs/ /',
    'RUN ["/bin/busybox", "--install", "-s", "/bin"]',
    'ENV PATH=/usr/local/bin:/bin',
    'CMD ["/usr/local/bin/node"]',
  ].join('\n'),
  files: () => [
    { path: 'rootfs/usr/local/bin/node', from: NODE_BINARY, mode: 0o755 },
    { path: 'rootfs/bin/busybox', from: BUSYBOX, mode: 0o755 },
    { path: 'rootfs/tmp/.keep', content: '' },
    ...sharedLibraries(NODE_BINARY).map((l) => ({ path: `rootfs${l.path}`, from: l.real, mode: 0o755 })),
  ],
};

export const testImages = { busybox: busyboxImage, node: nodeImage } as const;
