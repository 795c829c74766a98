// Imports of existing data for new instances: upload a gzip tar (streamed,
// validated like a layer, inspected for a Minecraft world) and read back its
// inspection. POST /instances then names the uploadId.

import { Type, type Static } from '@sinclair/typebox';
import type { FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import { AppError } from '../../shared/errors.js';
import { readScope, writeScope } from '../auth/scopes.js';
import { auditTarget } from '../audit.js';
import type { ServerContext } from '../context.js';
import type { ImportRecord } from '../services/import-store.js';
import { found } from './route-helpers.js';

const ARCHIVE_TYPES = ['application/gzip', 'application/x-gzip', 'application/octet-stream', 'application/x-tar+gzip'];
const UploadParams = Type.Object({ uploadId: Type.String({ minLength: 1, maxLength: 64 }) });

export function importView(r: ImportRecord) {
  return {
    uploadId: r.uploadId,
    entries: r.entries,
    sizeBytes: r.sizeBytes,
    detected: r.detected,
    confidence: r.confidence,
    notes: r.notes,
  };
}

export async function importRoutes(api: FastifyInstance, ctx: ServerContext): Promise<void> {
  const imports = ctx.imports;
  // The body stays a stream: the import store bounds and checks it while writing.
  api.addContentTypeParser(ARCHIVE_TYPES, (req, payload, done) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > imports.maxArchiveBytes) {
      done(
        new AppError(
          'ARCHIVE_TOO_LARGE',
          `import archive of ${declared} bytes is larger than the limit of ${imports.maxArchiveBytes} bytes`,
        ),
        undefined,
      );
      return;
    }
    done(null, payload);
  });

  api.put(
    '/imports',
    {
      schema: { tags: ['instances'], summary: 'Upload existing data (gzip tar) for a new instance; answers its inspection' },
      config: { auth: { scope: writeScope('instances') }, audit: { action: 'import.upload', targetKind: 'import' } },
    },
    async (req, reply) => {
      if (!req.body || typeof (req.body as Readable).pipe !== 'function') {
        throw new AppError('VALIDATION_FAILED', `send the data as a gzip tar with content-type ${ARCHIVE_TYPES.slice(0, 2).join(' or ')}`);
      }
      const record = await imports.upload(req.body as Readable);
      auditTarget(req, record.uploadId, { sizeBytes: record.sizeBytes, confidence: record.confidence });
      return reply.status(201).send(importView(record));
    },
  );

  api.get(
    '/imports/:uploadId',
    {
      schema: { tags: ['instances'], summary: 'The inspection of an uploaded import', params: UploadParams },
      config: { auth: { scope: readScope('instances') } },
    },
    async (req) => {
      const { uploadId } = req.params as Static<typeof UploadParams>;
      const record = found(await imports.get(uploadId), 'NOT_FOUND', `import upload ${uploadId} does not exist`);
      return importView(record);
    },
  );
}
