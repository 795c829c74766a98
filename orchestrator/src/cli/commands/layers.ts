// `ectl layers push|ls`: template layers. A directory is packed deterministically
// (shared safe-tar packer) into a temp file, then uploaded with a progress bar.
// `layers delete|prune` refuse: the API cannot delete layers yet.

import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, open, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import type { ApiClient } from '../api-client.js';
import { layerChecksum } from '../../shared/layer-checksum.js';
import { packDirectory } from '../../shared/safe-tar.js';
import { RESOURCE_ID_PATTERN } from '../../shared/ids.js';
import { enc } from '../api-client.js';
import { listCommand } from '../command-shapes.js';
import { CliError } from '../errors.js';
import { printFields, printJson } from '../output.js';
import { startProgress } from '../progress.js';
import type { CommandContext } from '../program.js';
import { formatAge, formatBytes, keyColumns } from '../table.js';
import type { LayerView } from '../../contracts/public-api/views.js';

export type { LayerView };

const UPLOAD_TIMEOUT_MS = 30 * 60_000;

async function isGzip(file: string): Promise<boolean> {
  const fh = await open(file, 'r');
  try {
    const { bytesRead, buffer } = await fh.read(Buffer.alloc(2), 0, 2, 0);
    return bytesRead === 2 && buffer[0] === 0x1f && buffer[1] === 0x8b;
  } finally {
    await fh.close();
  }
}

export interface PreparedArchive {
  file: string;
  size: number;
  /** Canonical checksum computed locally (directories only). */
  localChecksum?: string;
  cleanup(): Promise<void>;
}

/** A directory packed into a temp gzip tar, or a given .tar.gz checked by its magic bytes. */
export async function prepareArchive(path: string): Promise<PreparedArchive> {
  let info;
  try {
    info = await stat(path);
  } catch {
    throw new CliError('usage', `${path} does not exist`);
  }
  if (info.isDirectory()) {
    const dir = await mkdtemp(join(tmpdir(), 'ectl-layer-'));
    const cleanup = () => rm(dir, { recursive: true, force: true });
    try {
      const file = join(dir, 'layer.tar.gz');
      await pipeline(packDirectory(path), createWriteStream(file, { mode: 0o600 }));
      const localChecksum = await layerChecksum(path);
      return { file, size: (await stat(file)).size, localChecksum, cleanup };
    } catch (err) {
      await cleanup();
      if (err instanceof Error && 'code' in err && err.code === 'INVALID_ARCHIVE') throw new CliError('usage', `${path}: ${err.message}`);
      throw err;
    }
  }
  if (!info.isFile()) throw new CliError('usage', `${path} is neither a directory nor a file`);
  if (!/\.(tar\.gz|tgz)$/.test(basename(path)) || !(await isGzip(path))) {
    throw new CliError('usage', `${path} must be a gzip tar (.tar.gz) or a directory`);
  }
  return { file: path, size: info.size, cleanup: async () => undefined };
}

/** PUTs a prepared archive with a progress bar on stderr. */
export async function uploadArchive<T>(
  ctx: CommandContext,
  client: ApiClient,
  archive: PreparedArchive,
  label: string,
  path: string,
): Promise<T> {
  const progress = startProgress(ctx.out, label, archive.size);
  const counter = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      progress.advance(chunk.length);
      cb(null, chunk);
    },
  });
  const source = createReadStream(archive.file).pipe(counter);
  const result = await client.request<T>('PUT', path, {
    stream: source,
    contentType: 'application/gzip',
    contentLength: archive.size,
    timeoutMs: UPLOAD_TIMEOUT_MS,
  });
  progress.done();
  return result;
}

export function registerLayers(program: Command, ctx: CommandContext): void {
  const layers = program.command('layers').description('push and list template layers');
  layers
    .command('push <id> <path>')
    .description('upload a directory (packed deterministically) or a .tar.gz as a layer')
    .option('--json', 'print JSON')
    .action(async (id: string, path: string, opts: { json?: boolean }) => {
      if (!RESOURCE_ID_PATTERN.test(id) || id.length > 128)
        throw new CliError('usage', `layer id "${id}" is invalid: use letters, digits, '_', '.', '-'`);
      const client = await ctx.client();
      const archive = await prepareArchive(ctx.resolvePath(path));
      try {
        const result = await uploadArchive<LayerView>(ctx, client, archive, `uploading ${id}`, `/template-layers/${enc(id)}`);
        if (archive.localChecksum && result.checksum !== archive.localChecksum) {
          throw new CliError(
            'runtime',
            `the orchestrator computed checksum ${result.checksum} but the directory's is ${archive.localChecksum}`,
          );
        }
        const view = { id: result.id, checksum: result.checksum, sizeBytes: result.sizeBytes };
        if (opts.json) return printJson(ctx.out, view);
        printFields(ctx.out, [
          ['id', view.id],
          ['checksum', view.checksum],
          ['size', `${formatBytes(view.sizeBytes)} (${view.sizeBytes} bytes)`],
        ]);
      } finally {
        await archive.cleanup();
      }
    });
  listCommand<LayerView>(layers, ctx, {
    description: 'list layers (every id/checksum pair)',
    path: '/template-layers',
    key: 'layers',
    columns: [
      ...keyColumns<LayerView>('id', 'checksum'),
      { header: 'size', value: (l) => formatBytes(l.sizeBytes), align: 'right' },
      { header: 'pushed', value: (l) => formatAge(l.createdAt, ctx.now()) },
    ],
    empty: 'no layers yet: ectl layers push ID DIR',
  });
  layers
    .command('delete <id> [checksum]')
    .description('delete a layer (every checksum, or one); refused while a template, variant or instance uses it')
    .option('--json', 'print the answer as JSON')
    .action(async (id: string, checksum: string | undefined, opts: { json?: boolean }) => {
      const res = await (
        await ctx.client()
      ).request<{ deleted: LayerView[] }>('DELETE', `/template-layers/${enc(id)}`, { query: checksum ? { checksum } : {} });
      if (opts.json) return printJson(ctx.out, res);
      for (const l of res.deleted) ctx.out.line(`deleted layer ${l.id}@${l.checksum}`);
    });
  layers
    .command('prune')
    .description('delete every layer checksum no template, variant or instance uses')
    .option('--json', 'print the answer as JSON')
    .action(async (opts: { json?: boolean }) => {
      const res = await (await ctx.client()).post<{ deleted: LayerView[] }>('/template-layers/prune', undefined);
      if (opts.json) return printJson(ctx.out, res);
      for (const l of res.deleted) ctx.out.line(`deleted layer ${l.id}@${l.checksum} (${formatBytes(l.sizeBytes)})`);
      ctx.out.line(res.deleted.length === 0 ? 'nothing to prune: every layer is in use' : `pruned ${res.deleted.length} layer version(s)`);
    });
}
