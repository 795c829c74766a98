// The canonical layer checksum (docs/layer-checksum.md): a
// SHA-256 over a sorted manifest of the tree, independent of tar/gzip encoding,
// mtimes and owners. Used by the agent's cache, the orchestrator's upload and ectl.
//
// Contracts:
// - `new ManifestBuilder()`: `addDir(path)` / `addFile(path, executable, size, sha256)`
//   collect entries in any order (e.g. while extracting); `kindOf(path)` tells what
//   a path already is; `manifest()` and `checksum()` render the sorted result. A
//   second, different entry for a path throws; repeating a directory is a no-op.
// - `layerManifest(dir)` / `layerChecksum(dir)`: walk a directory without following
//   symlinks; anything but regular files and directories (or a name that is not
//   valid UTF-8 or holds a control character) fails with AppError INVALID_ARCHIVE.
// - `walkLayerTree(dir)` yields entries depth-first in bytewise order (used by packing).
// - `normalizeLayerPath(raw)` returns the canonical relative path or a reason it is unsafe.

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { AppError } from './errors.js';

export type EntryKind = 'd' | 'f';

interface ManifestEntry {
  kind: EntryKind;
  line: string;
  key: Buffer;
}

/** Execute permission as the manifest records it: any x bit makes a file 755. */
export function manifestMode(mode: number): '755' | '644' {
  return (mode & 0o111) !== 0 ? '755' : '644';
}

// Control characters would make the line-based manifest ambiguous (a newline in a
// name could forge a line), and backslashes mean different things on different hosts.
// eslint-disable-next-line no-control-regex
const FORBIDDEN_CHARS = /[\u0000-\u001f\u007f\\\ufffd]/;

/**
 * Canonical form of an entry path: relative, `/`-separated, no leading `./`, no
 * trailing `/`. Returns `{ path }` ('' for the root itself) or `{ reason }`.
 */
export function normalizeLayerPath(raw: string): { path: string } | { reason: string } {
  if (raw.includes('\u0000')) return { reason: 'contains a NUL byte' };
  if (raw.startsWith('/')) return { reason: 'is an absolute path' };
  if (FORBIDDEN_CHARS.test(raw)) return { reason: 'contains a control character, a backslash or invalid UTF-8' };
  let path = raw;
  while (path.startsWith('./')) path = path.slice(2);
  while (path.endsWith('/')) path = path.slice(0, -1);
  if (path === '' || path === '.') return { path: '' };
  for (const segment of path.split('/')) {
    if (segment === '..') return { reason: "contains a '..' segment" };
    if (segment === '' || segment === '.') return { reason: "contains an empty or '.' segment" };
  }
  return { path };
}

export class ManifestBuilder {
  private readonly entries = new Map<string, ManifestEntry>();

  kindOf(path: string): EntryKind | undefined {
    return this.entries.get(path)?.kind;
  }

  get size(): number {
    return this.entries.size;
  }

  addDir(path: string): void {
    const existing = this.entries.get(path);
    if (existing?.kind === 'd') return;
    if (existing) throw new Error(`manifest already lists ${path} as a file`);
    this.entries.set(path, { kind: 'd', line: `d ${path}\n`, key: Buffer.from(path, 'utf8') });
  }

  addFile(path: string, executable: boolean, size: number, sha256: string): void {
    if (this.entries.has(path)) throw new Error(`manifest already lists ${path}`);
    const line = `f ${path} ${executable ? '755' : '644'} ${size} ${sha256}\n`;
    this.entries.set(path, { kind: 'f', line, key: Buffer.from(path, 'utf8') });
  }

  manifest(): string {
    return [...this.entries.values()]
      .sort((a, b) => Buffer.compare(a.key, b.key))
      .map((entry) => entry.line)
      .join('');
  }

  checksum(): string {
    return sha256Hex(this.manifest());
  }
}

export function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function decodeName(raw: Buffer, where: string): string {
  try {
    return UTF8.decode(raw);
  } catch {
    throw new AppError('INVALID_ARCHIVE', `layer tree has a name that is not valid UTF-8 in ${where || '.'}`);
  }
}

async function hashFile(path: string): Promise<{ size: number; sha256: string }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of createReadStream(path)) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { size, sha256: hash.digest('hex') };
}

export interface LayerTreeEntry {
  /** Canonical relative path. */
  path: string;
  absolutePath: string;
  kind: EntryKind;
  /** Permission bits from lstat (files: used for the 755/644 decision). */
  mode: number;
}

/**
 * Walks `root` depth-first, parents before children, siblings in bytewise name
 * order, never following symlinks. Throws INVALID_ARCHIVE on anything that cannot
 * be in a layer (links, devices, fifos, sockets, unsafe names).
 */
export async function* walkLayerTree(root: string): AsyncGenerator<LayerTreeEntry> {
  const rootStat = await lstat(root);
  if (!rootStat.isDirectory()) throw new AppError('INVALID_ARCHIVE', `layer root ${root} is not a directory`);
  yield* walkChildren(root, '');
}

async function* walkChildren(root: string, relDir: string): AsyncGenerator<LayerTreeEntry> {
  const rawNames = (await readdir(join(root, relDir), { encoding: 'buffer' })).sort(Buffer.compare);
  for (const rawName of rawNames) {
    const name = decodeName(rawName, relDir);
    const rel = relDir === '' ? name : `${relDir}/${name}`;
    const checked = normalizeLayerPath(rel);
    if ('reason' in checked || checked.path !== rel) {
      throw new AppError(
        'INVALID_ARCHIVE',
        `layer entry ${JSON.stringify(rel)} ${'reason' in checked ? checked.reason : 'is not canonical'}`,
      );
    }
    const absolutePath = join(root, rel);
    const stat = await lstat(absolutePath);
    if (stat.isDirectory()) {
      yield { path: rel, absolutePath, kind: 'd', mode: stat.mode };
      yield* walkChildren(root, rel);
    } else if (stat.isFile()) {
      yield { path: rel, absolutePath, kind: 'f', mode: stat.mode };
    } else {
      throw new AppError(
        'INVALID_ARCHIVE',
        `layer entry ${JSON.stringify(rel)} is not a regular file or directory (links, devices, fifos and sockets are not allowed)`,
      );
    }
  }
}

/** Walks `root` into a builder, hashing every file. */
export async function buildManifest(root: string): Promise<ManifestBuilder> {
  const builder = new ManifestBuilder();
  for await (const entry of walkLayerTree(root)) {
    if (entry.kind === 'd') {
      builder.addDir(entry.path);
    } else {
      const { size, sha256 } = await hashFile(entry.absolutePath);
      builder.addFile(entry.path, manifestMode(entry.mode) === '755', size, sha256);
    }
  }
  return builder;
}

/** The canonical manifest text of a directory tree. */
export async function layerManifest(dir: string): Promise<string> {
  return (await buildManifest(dir)).manifest();
}

/** The canonical layer checksum (lowercase hex SHA-256 of the manifest) of a tree. */
export async function layerChecksum(dir: string): Promise<string> {
  return (await buildManifest(dir)).checksum();
}
