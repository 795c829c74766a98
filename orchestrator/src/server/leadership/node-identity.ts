// A replica's identity: a stable node id (ENDERCLOUD_NODE_ID, or generated once
// and kept in the data dir) plus a fresh incarnation per boot. Command claims
// are recorded as `<node>:<incarnation>`, so a restarted node knows which claims
// belonged to its previous, dead incarnation and takes them back at once.

import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AppError } from '../../shared/errors.js';

export const NODE_ID_FILE = 'node-id';
export const NODE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export interface NodeIdentity {
  nodeId: string;
  incarnation: string;
  /** `<nodeId>:<incarnation>`: the command worker's claimer name. */
  claimer: string;
}

export function assertNodeId(id: string, source: string): string {
  if (!NODE_ID_PATTERN.test(id))
    throw new AppError('VALIDATION_FAILED', `${source}: node id ${JSON.stringify(id)} must match ${NODE_ID_PATTERN.source}`);
  return id;
}

/** The configured id, else the one in `<dataDir>/node-id`, else a new one written there. */
export async function loadNodeIdentity(dataDir: string, configured: string | undefined): Promise<NodeIdentity> {
  const file = path.join(dataDir, NODE_ID_FILE);
  let nodeId = configured;
  if (nodeId === undefined) {
    try {
      nodeId = assertNodeId((await readFile(file, 'utf8')).trim(), file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      nodeId = `node-${randomBytes(6).toString('hex')}`;
      await writeFile(`${file}.tmp`, `${nodeId}\n`);
      await rename(`${file}.tmp`, file);
    }
  }
  const incarnation = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
  return { nodeId, incarnation, claimer: `${nodeId}:${incarnation}` };
}
