// `ectl imports push PATH` (existing data — a world directory or a .tar.gz —
// uploaded and inspected for a new instance) and `ectl imports get ID`; then
// `ectl instances create --import ID`.

import type { Command } from 'commander';
import { enc } from '../api-client.js';
import { jsonCommand } from '../command-shapes.js';
import { printFields, printJson } from '../output.js';
import type { CommandContext } from '../program.js';
import { formatBytes } from '../table.js';
import { prepareArchive, uploadArchive } from './layers.js';
import type { ImportView } from '../../contracts/public-api/views.js';

function printImport(ctx: CommandContext, r: ImportView): void {
  printFields(ctx.out, [
    ['upload id', r.uploadId],
    ['entries', String(r.entries)],
    ['size', formatBytes(r.sizeBytes)],
    ['detected', typeof r.detected === 'string' ? r.detected : JSON.stringify(r.detected)],
    ['confidence', r.confidence],
    ...r.notes.map((n): [string, string] => ['note', n]),
  ]);
}

export function registerImports(program: Command, ctx: CommandContext): void {
  const imports = program.command('imports').description('existing data for new instances (then: ectl instances create --import ID)');
  imports
    .command('push <path>')
    .description('upload a directory (packed deterministically) or a .tar.gz; prints its inspection')
    .option('--json', 'print JSON')
    .action(async (path: string, opts: { json?: boolean }) => {
      const client = await ctx.client();
      const archive = await prepareArchive(ctx.resolvePath(path));
      try {
        const r = await uploadArchive<ImportView>(ctx, client, archive, 'uploading import', '/imports');
        if (opts.json) return printJson(ctx.out, r);
        printImport(ctx, r);
      } finally {
        await archive.cleanup();
      }
    });
  jsonCommand<ImportView>(imports, ctx, {
    use: 'get <uploadId>',
    description: 'the inspection of an uploaded import',
    fetch: async (_opts, id) => (await ctx.client()).get<ImportView>(`/imports/${enc(id)}`),
    render: (r) => printImport(ctx, r),
  });
}
