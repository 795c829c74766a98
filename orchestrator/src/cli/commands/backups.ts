// Backup transfers in ectl: `instances backup download NAME BACKUP -o FILE`
// (streamed from the orchestrator's backup store, sha256 checked against the
// answer's header) and `instances restore NAME --upload FILE` (the archive goes
// through PUT /imports, so the import checks apply, then restore names it).

import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { enc, type ApiClient } from '../api-client.js';
import { CliError } from '../errors.js';
import { printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatBytes } from '../table.js';
import { prepareArchive, uploadArchive } from './layers.js';

/** World-sized archives: the download bound covers the answer's head only. */
const DOWNLOAD_HEAD_TIMEOUT_MS = 60_000;

async function download(ctx: CommandContext, name: string, backupId: string, file: string, opts: { json?: boolean }): Promise<void> {
  const client = await ctx.client();
  const target = ctx.resolvePath(file);
  const tmp = `${target}.part`;
  const { stream, headers } = await client.download(`/instances/${enc(name)}/backups/${enc(backupId)}/download`, DOWNLOAD_HEAD_TIMEOUT_MS);
  const hash = createHash('sha256');
  let bytes = 0;
  const digest = new Transform({
    transform(chunk: Buffer, _e, cb) {
      hash.update(chunk);
      bytes += chunk.length;
      cb(null, chunk);
    },
  });
  try {
    await pipeline(stream, digest, createWriteStream(tmp, { mode: 0o600 }));
    const sha256 = hash.digest('hex');
    const expected = headers.get('x-backup-sha256');
    if (expected && expected !== sha256)
      throw new CliError('runtime', `the download of ${backupId} hashes to ${sha256}, the orchestrator said ${expected}: not kept`);
    await rename(tmp, target);
    if (opts.json) return printJson(ctx.out, { backupId, file: target, sizeBytes: bytes, sha256 });
    ctx.out.line(`backup ${backupId} of ${name}: ${formatBytes(bytes)} written to ${target} (sha256 ${sha256})`);
  } finally {
    await rm(tmp, { force: true });
  }
}

/** Uploads `file` (a .tar.gz or a directory) through the import checks and answers the upload id restore names. */
export async function uploadForRestore(ctx: CommandContext, client: ApiClient, file: string): Promise<string> {
  const archive = await prepareArchive(ctx.resolvePath(file));
  try {
    return (await uploadArchive<{ uploadId: string }>(ctx, client, archive, 'uploading the archive to restore', '/imports')).uploadId;
  } finally {
    await archive.cleanup();
  }
}

/** Adds `download` below the existing `instances backup` command. */
export function registerBackupTransfers(instances: Command, ctx: CommandContext): void {
  const backup = instances.commands.find((c) => c.name() === 'backup');
  if (!backup) throw new Error('registerBackupTransfers runs after the instances backup command is registered');
  backup
    .command('download <name> <backupId>')
    .description('stream one backup archive from the orchestrator backup store to a file')
    .requiredOption('-o, --output <file>', 'where to write the .tar.gz')
    .option('--json', 'print JSON')
    .action((name: string, backupId: string, opts: { output: string; json?: boolean }) => download(ctx, name, backupId, opts.output, opts));
}
