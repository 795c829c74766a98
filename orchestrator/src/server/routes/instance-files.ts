// The files of an instance's data directory (docs/orchestrator.md "Files"):
// list, download and upload (both streamed), mkdir, rename/move, delete,
// archive and extract. `files:read` / `files:write` (plain `read` does not
// reach file contents). Every write is audited by the files service, which
// SFTP shares; the hook here only records refusals before it (401/403, bad input).

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Readable } from 'node:stream';
import { FILE_CONTENT_TYPE } from '../../contracts/agent-api.js';
import { AppError } from '../../shared/errors.js';
import { FILES_READ, FILES_WRITE } from '../auth/scopes.js';
import { actorOf, type ServerContext } from '../context.js';
import type { FileCaller } from '../services/instance-files.js';

const Params = Type.Object({ id: Type.String({ minLength: 1, maxLength: 128 }) });
const FilePath = Type.String({
  minLength: 1,
  maxLength: 1024,
  pattern: '^/',
  description: 'relative to the instance data directory, with a leading "/"',
});
const FilePaths = Type.Array(FilePath, { minItems: 1, maxItems: 100 });
const PathQuery = Type.Object({ path: FilePath }, { additionalProperties: false });
const ListQuery = Type.Object({ path: Type.Optional(FilePath) }, { additionalProperties: false });
const DirectoryBody = Type.Object({ path: FilePath }, { additionalProperties: false });
const RenameBody = Type.Object({ from: FilePath, to: FilePath }, { additionalProperties: false });
const DeleteBody = Type.Object({ paths: FilePaths }, { additionalProperties: false });
const ArchiveBody = Type.Object({ paths: FilePaths, destination: Type.Optional(FilePath) }, { additionalProperties: false });
const ExtractBody = Type.Object({ path: FilePath, destination: Type.Optional(FilePath) }, { additionalProperties: false });

const TAGS = ['files'];
const id = (req: FastifyRequest): string => (req.params as Static<typeof Params>).id;

/** The caller as the files service audits it; from here on the service writes the request's audit entry. */
function caller(req: FastifyRequest): FileCaller {
  req.auditInfo = { ...req.auditInfo, byService: true };
  return { actor: actorOf(req), via: 'http', requestId: req.id };
}

/** A quoted-string filename for content-disposition (no quotes, backslashes or control characters), plus the RFC 5987 form. */
function disposition(name: string): string {
  // eslint-disable-next-line no-control-regex
  const plain = name.replace(/[\u0000-\u001f\u007f"\\]/g, '_').replace(/[^\x20-\x7e]/g, '_');
  return `attachment; filename="${plain}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

export async function instanceFileRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  const files = ctx.files;
  await api.register(async (scope) => {
    // Uploads stay a stream end to end (never buffered): the service bounds them, the host writes them.
    scope.addContentTypeParser(FILE_CONTENT_TYPE, (req, payload, done) => {
      const declared = Number(req.headers['content-length']);
      if (Number.isFinite(declared) && declared > files.maxUploadBytes) {
        done(
          new AppError(
            'FILE_TOO_LARGE',
            `the upload of ${declared} bytes is larger than the limit of ${files.maxUploadBytes} bytes (ENDERCLOUD_FILE_UPLOAD_MAX_BYTES)`,
          ),
          undefined,
        );
        return;
      }
      done(null, payload);
    });

    scope.get(
      '/instances/:id/files',
      {
        schema: {
          tags: TAGS,
          summary: 'List a directory of the instance data (directories first, then by name)',
          params: Params,
          querystring: ListQuery,
        },
        config: { auth: { scope: FILES_READ } },
      },
      async (req) =>
        files.list(id(req), (req.query as Static<typeof ListQuery>).path ?? '/', { actor: actorOf(req), via: 'http', requestId: req.id }),
    );

    scope.get(
      '/instances/:id/files/content',
      {
        schema: { tags: TAGS, summary: 'Download a file (streamed, any size)', params: Params, querystring: PathQuery },
        config: { auth: { scope: FILES_READ } },
      },
      async (req, reply) => {
        const opened = await files.read(id(req), (req.query as Static<typeof PathQuery>).path, {
          actor: actorOf(req),
          via: 'http',
          requestId: req.id,
        });
        return reply
          .type(FILE_CONTENT_TYPE)
          .header('content-length', String(opened.size))
          .header('content-disposition', disposition(opened.name))
          .header('cache-control', 'no-store')
          .send(opened.stream);
      },
    );

    scope.put(
      '/instances/:id/files/content',
      {
        schema: {
          tags: TAGS,
          summary:
            'Create or replace a file with the raw body (application/octet-stream, streamed; atomic replace; the parent directory must exist)',
          params: Params,
          querystring: PathQuery,
        },
        config: { auth: { scope: FILES_WRITE }, audit: { action: 'file.write', targetKind: 'instance' } },
      },
      async (req) => {
        const body = req.body as Readable | undefined;
        if (!body || typeof body.pipe !== 'function')
          throw new AppError('VALIDATION_FAILED', `send the file as the raw body with content-type ${FILE_CONTENT_TYPE}`);
        return files.write(id(req), (req.query as Static<typeof PathQuery>).path, body, caller(req));
      },
    );

    scope.post(
      '/instances/:id/files/directory',
      {
        schema: { tags: TAGS, summary: 'Create a directory (its parent must exist)', params: Params, body: DirectoryBody },
        config: { auth: { scope: FILES_WRITE }, audit: { action: 'file.mkdir', targetKind: 'instance' } },
      },
      async (req) => files.mkdir(id(req), (req.body as Static<typeof DirectoryBody>).path, caller(req)),
    );

    scope.post(
      '/instances/:id/files/rename',
      {
        schema: { tags: TAGS, summary: 'Rename or move a file or directory (never overwrites)', params: Params, body: RenameBody },
        config: { auth: { scope: FILES_WRITE }, audit: { action: 'file.rename', targetKind: 'instance' } },
      },
      async (req) => {
        const b = req.body as Static<typeof RenameBody>;
        return files.rename(id(req), b.from, b.to, caller(req));
      },
    );

    scope.post(
      '/instances/:id/files/delete',
      {
        schema: { tags: TAGS, summary: 'Delete files and directories (recursively); all must exist', params: Params, body: DeleteBody },
        config: { auth: { scope: FILES_WRITE }, audit: { action: 'file.delete', targetKind: 'instance' } },
      },
      async (req) => files.remove(id(req), (req.body as Static<typeof DeleteBody>).paths, caller(req)),
    );

    scope.post(
      '/instances/:id/files/archive',
      {
        schema: {
          tags: TAGS,
          summary: 'Pack files and directories into a new .tar.gz (default /archive-<UTC yyyymmdd-hhmmss>.tar.gz)',
          params: Params,
          body: ArchiveBody,
        },
        config: { auth: { scope: FILES_WRITE }, audit: { action: 'file.archive', targetKind: 'instance' } },
      },
      async (req) => {
        const b = req.body as Static<typeof ArchiveBody>;
        return files.archive(id(req), b.paths, b.destination, caller(req));
      },
    );

    scope.post(
      '/instances/:id/files/extract',
      {
        schema: {
          tags: TAGS,
          summary: 'Extract a .tar, .tar.gz or .tgz (default into its own directory; never overwrites; the data import limits apply)',
          params: Params,
          body: ExtractBody,
        },
        config: { auth: { scope: FILES_WRITE }, audit: { action: 'file.extract', targetKind: 'instance' } },
      },
      async (req) => {
        const b = req.body as Static<typeof ExtractBody>;
        return files.extract(id(req), b.path, b.destination, caller(req));
      },
    );
  });
}
