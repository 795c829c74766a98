// GET /api/v1/images/inspect: what an image reference resolves to on this
// host (content id, repo digests, creation time, size), pulling it first when
// asked. The orchestrator's update plan compares the current and candidate images with it.

import type { FastifyInstance } from 'fastify';
import { ImageInspectQuery, type ImageInfo } from '../contracts/agent-api.js';
import { AppError } from '../shared/errors.js';
import type { ContainerRuntime } from './runtime.js';

export type { ImageInfo };

/**
 * A runtime that can describe an image in full. Optional: a runtime with only
 * `imageId` still answers, with the content id alone.
 */
export interface ImageDescriber {
  describeImage(ref: string): Promise<Omit<ImageInfo, 'ref' | 'pulled'> | undefined>;
}

function hasDescriber(runtime: ContainerRuntime): runtime is ContainerRuntime & ImageDescriber {
  return typeof (runtime as Partial<ImageDescriber>).describeImage === 'function';
}

export async function inspectImage(runtime: ContainerRuntime, ref: string, pull: boolean): Promise<ImageInfo> {
  let pulled = false;
  if (pull) pulled = (await runtime.ensureImage(ref, undefined, 'always')).pulled;
  if (hasDescriber(runtime)) {
    const info = await runtime.describeImage(ref);
    if (info) return { ref, ...info, pulled };
  } else {
    const id = await runtime.imageId(ref);
    if (id !== undefined) return { ref, id, repoDigests: [], created: null, sizeBytes: null, user: null, pulled };
  }
  throw new AppError(
    'IMAGE_NOT_FOUND',
    `image ${ref} is not present on this host${pull ? ' even after a pull' : ' (ask with pull=true to pull it)'}`,
  );
}

export async function imageRoutes(api: FastifyInstance, runtime: ContainerRuntime): Promise<void> {
  api.get('/images/inspect', { schema: { querystring: ImageInspectQuery } }, async (req) => {
    const { ref, pull } = req.query as ImageInspectQuery;
    return inspectImage(runtime, ref, pull === true);
  });
}
