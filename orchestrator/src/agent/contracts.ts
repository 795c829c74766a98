// Contracts between the agent's parts, so the HTTP layer, the instance service,
// the layer cache and the runtime directories can be built and tested apart.

import type { Readable } from 'node:stream';
import type { LayerRef } from '../contracts/agent-api.js';

/** A template layer addressed by id and canonical checksum (docs/layer-checksum.md); the wire shape of the agent API. */
export type { LayerRef };

/** Where missing layers come from: the orchestrator's archive endpoint. */
export interface LayerSource {
  /** Streams the gzip tar of one layer; rejects with AppError on HTTP failure. */
  fetchArchive(ref: LayerRef, signal?: AbortSignal): Promise<Readable>;
}

/** Verified, immutable layer trees under `<cache>/<layer-id>/<checksum>`. */
export interface LayerCache {
  /**
   * Returns the directory of the verified layer, downloading, checking and
   * renaming it into place on a miss. Concurrent calls for the same ref share
   * one download. Throws AppError INVALID_ARCHIVE / CHECKSUM_MISMATCH /
   * ARCHIVE_TOO_LARGE and leaves nothing behind on failure.
   */
  ensure(ref: LayerRef): Promise<string>;
}

/** Instance runtime directories under `<runtime>/instances/<instance-id>`. */
export interface RuntimeDirectories {
  /** Agent-side path of an instance directory (validated: one direct child). */
  localPath(instanceId: string): string;
  /** The same directory as the Docker daemon sees it (for the /data bind). */
  hostPath(instanceId: string): string;
  exists(instanceId: string): Promise<boolean>;
  /**
   * Copies the ordered layer trees into a staging directory, removes every
   * variant.yml, then renames staging to the instance id. Later layers
   * overwrite earlier files; executable bits are kept. Fails with
   * INSTANCE_CONFLICT if the directory already exists. With `owner`, every
   * directory and file (the instance directory included) is lchown'd to it as
   * it is created — the only ownership change ever made (never recursive later).
   */
  materialize(instanceId: string, layerDirs: readonly string[], owner?: { uid: number; gid: number }): Promise<string>;
  /** Removes the instance directory; refuses any path that is not one direct child of `<runtime>/instances`. */
  remove(instanceId: string): Promise<void>;
  /**
   * Removes relative paths inside the instance directory (validated: UNSAFE_PATH
   * for absolute, `..`, empty or a symlinked parent); answers how many existed.
   */
  removeScoped(instanceId: string, relativePaths: readonly string[]): Promise<number>;
}
