// Images built on the local Docker engine from files on this machine, tagged by
// a hash of their content, so each is built once per content and reused: the
// tests' images (test/support/images.ts) and the Minecraft-protocol server the
// dev stack's example network runs (`npm start`, examples/network.yml). One
// function for both, so what the tests run is what the example runs.
// (A dev and test tool: the agent's own Docker adapter is src/agent/docker-runtime.ts.)

import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import Docker from 'dockerode';
import { pack } from 'tar-stream';

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

export const LOCAL_IMAGE_REPO = 'endercloud-test';
const DEFAULT_SOCKET = '/var/run/docker.sock';

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
  const tag = `${LOCAL_IMAGE_REPO}/${def.name}:${hash.digest('hex').slice(0, 16)}`;
  tagCache.set(def.name, tag);
  return tag;
}

const clients = new Map<string, Docker>();
function engine(socketPath: string): Docker {
  let c = clients.get(socketPath);
  if (!c) clients.set(socketPath, (c = new Docker({ socketPath })));
  return c;
}

export async function imageExists(tag: string, socketPath = DEFAULT_SOCKET): Promise<boolean> {
  try {
    await engine(socketPath).getImage(tag).inspect();
    return true;
  } catch {
    return false;
  }
}

export interface EnsureImageOptions {
  socketPath?: string;
  /** A stable tag (`repo:tag`) pointed at the content tag too, e.g. `endercloud/mc-server:local`. */
  alias?: string;
  /** Called once before a build starts (not when the content tag exists). */
  onBuild?: (tag: string) => void;
}

/** Builds the image unless an image with the same content tag already exists; returns the content tag. */
export async function ensureImage(def: ImageDefinition, options: EnsureImageOptions = {}): Promise<string> {
  const socketPath = options.socketPath ?? DEFAULT_SOCKET;
  const docker = engine(socketPath);
  const tag = imageTag(def);
  if (!(await imageExists(tag, socketPath))) {
    options.onBuild?.(tag);
    const ctx = pack();
    ctx.entry({ name: 'Dockerfile', mode: 0o644 }, def.dockerfile);
    for (const f of def.files()) ctx.entry({ name: f.path, mode: fileMode(f) }, fileBytes(f));
    ctx.finalize();
    const stream = await docker.buildImage(ctx as unknown as NodeJS.ReadableStream, { t: tag, rm: true, forcerm: true });
    const output = await new Promise<unknown[]>((resolve, reject) =>
      docker.modem.followProgress(stream, (err, res) => (err ? reject(err) : resolve(res))),
    );
    const failure = output.find((o) => (o as { error?: string }).error) as { error?: string } | undefined;
    if (failure) throw new Error(`building ${tag} failed: ${failure.error}`);
  }
  if (options.alias) {
    // Re-pointed every time: a content change moves the alias to the new build.
    const at = options.alias.lastIndexOf(':');
    const named = at > options.alias.lastIndexOf('/');
    await docker
      .getImage(tag)
      .tag({ repo: named ? options.alias.slice(0, at) : options.alias, tag: named ? options.alias.slice(at + 1) : 'latest' });
  }
  return tag;
}

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

/** The node binary running this process; images built FROM scratch carry it. */
export const NODE_BINARY = realpathSync(process.execPath);
