// Pure rules for what a create or replace request turns into: validation of
// the user, extra labels and ids, the agent's bookkeeping labels, and the
// config hash that tells a finished replace from a pending one. No I/O.

import { createHash } from 'node:crypto';
import { AppError } from '../shared/errors.js';
import { capAddProblem } from '../shared/capabilities.js';
import { RESOURCE_ID_PATTERN, assertChecksum, assertId } from '../shared/ids.js';
import type { CreateInstanceBody, LayerRef } from '../contracts/agent-api.js';
import { LABEL, RESERVED_LABEL_PREFIX, ownershipLabels } from './labels.js';
import { CONFIG_FILES_LABEL, fillPublishedIp } from './egg-runtime.js';

export const DEFAULT_CONTAINER_PORT = 25565;

/** A create request is exactly the wire body (src/contracts/agent-api.ts). */
export type CreateInstanceRequest = CreateInstanceBody;

const USER_PATTERN = /^(\d{1,10})(?::(\d{1,10}))?$/;
const MAX_UNIX_ID = 2 ** 31 - 1;
const LABEL_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;
const MAX_LABEL_KEY = 128;

export function assertUser(user: unknown): string {
  const m = typeof user === 'string' ? USER_PATTERN.exec(user) : null;
  const inRange = m !== null && Number(m[1]) <= MAX_UNIX_ID && (m[2] === undefined || Number(m[2]) <= MAX_UNIX_ID);
  if (!inRange) {
    throw new AppError(
      'VALIDATION_FAILED',
      `user ${JSON.stringify(user)} is invalid: use "uid" or "uid:gid" with numeric ids (0-${MAX_UNIX_ID})`,
    );
  }
  return user as string;
}

/**
 * The owner of a new runtime directory for a create `user`: "uid:gid" as given,
 * "uid" alone with group 0 (what Docker runs it as without an /etc/passwd
 * entry); undefined for the image's own user, whose ids the agent cannot know.
 */
export function directoryOwner(user: string | undefined): { uid: number; gid: number } | undefined {
  if (user === undefined) return undefined;
  const m = USER_PATTERN.exec(assertUser(user)) as RegExpExecArray;
  return { uid: Number(m[1]), gid: m[2] === undefined ? 0 : Number(m[2]) };
}

export function assertExtraLabels(labels: Readonly<Record<string, string>>): void {
  for (const key of Object.keys(labels)) {
    if (key.toLowerCase().startsWith(RESERVED_LABEL_PREFIX)) {
      throw new AppError(
        'VALIDATION_FAILED',
        `labels key ${JSON.stringify(key)} is reserved: keys starting with "${RESERVED_LABEL_PREFIX}" belong to the agent`,
      );
    }
    if (key.length > MAX_LABEL_KEY || !LABEL_KEY_PATTERN.test(key)) {
      throw new AppError(
        'VALIDATION_FAILED',
        `labels key ${JSON.stringify(key)} is invalid: use letters, digits, '.', '_', '/', '-' (at most ${MAX_LABEL_KEY} characters)`,
      );
    }
  }
}

/** Everything a create or replace checks before touching anything. */
export function validateCreateRequest(instanceId: string, req: Omit<CreateInstanceRequest, 'layers'> & { layers?: LayerRef[] }): void {
  assertId('instance id', instanceId, RESOURCE_ID_PATTERN);
  assertId('groupId', req.groupId);
  assertId('variantId', req.variantId);
  if (req.sessionId !== undefined) assertId('sessionId', req.sessionId);
  for (const layer of req.layers ?? []) {
    assertId('layer id', layer.id);
    assertChecksum(layer.checksum);
  }
  if (req.user !== undefined) assertUser(req.user);
  if (req.labels) assertExtraLabels(req.labels);
  if (req.security?.capAdd) {
    const problem = capAddProblem(req.security.capAdd);
    if (problem) throw new AppError('VALIDATION_FAILED', `body/security/capAdd ${problem}`, { details: { field: 'security/capAdd' } });
  }
  if (req.layout === 'wings' && req.command) {
    throw new AppError(
      'VALIDATION_FAILED',
      "body/command: layout wings runs the image's own entrypoint (it reads STARTUP); a command would replace it",
    );
  }
}

/**
 * Hash of every request field that shapes the container (not the layers: a
 * replace never re-materializes; not `pull`/`start`: they are how, not what).
 * Env order matters to Docker, so it is kept; labels are sorted.
 */
export function configHash(req: Omit<CreateInstanceRequest, 'layers'>): string {
  const canonical = {
    groupId: req.groupId,
    variantId: req.variantId,
    sessionId: req.sessionId ?? null,
    image: req.image,
    command: req.command ?? null,
    env: Object.entries(req.env ?? {}),
    labels: Object.entries(req.labels ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    memoryMb: req.resources.memoryMb,
    cpus: req.resources.cpus ?? null,
    containerPort: req.containerPort ?? DEFAULT_CONTAINER_PORT,
    user: req.user ?? null,
    stopSignal: req.stopSignal ?? null,
    stopTimeoutSeconds: req.stopTimeoutSeconds ?? null,
    // Egg fields join the hash only when set, so older containers keep theirs.
    ...(req.openStdin ? { openStdin: true } : {}),
    ...(req.configFiles && req.configFiles.length > 0 ? { configFiles: req.configFiles } : {}),
    ...(req.layout ? { layout: req.layout } : {}),
    // Hardening opt-outs likewise: a container created before they existed keeps its hash.
    ...(req.security?.capAdd && req.security.capAdd.length > 0 ? { capAdd: [...req.security.capAdd].sort() } : {}),
    ...(req.security?.readOnlyRootfs === false ? { readOnlyRootfs: false } : {}),
  };
  return createHash('sha256').update(JSON.stringify(canonical)).digest('hex').slice(0, 32);
}

/**
 * All labels of a new container: the caller's, then the agent's (which always win).
 * `publishedIp` fills the address into the config edits of a `wings` layout; the
 * config hash stays the request's own.
 */
export function containerLabels(
  agentId: string,
  instanceId: string,
  req: Omit<CreateInstanceRequest, 'layers'>,
  hostPort: number,
  publishedIp = '0.0.0.0',
): Record<string, string> {
  const extra = req.labels ?? {};
  const configFiles = req.configFiles && req.layout === 'wings' ? fillPublishedIp(req.configFiles, publishedIp) : req.configFiles;
  return {
    ...extra,
    ...ownershipLabels({ agentId, instanceId, groupId: req.groupId, variantId: req.variantId, sessionId: req.sessionId, hostPort }),
    [LABEL.user]: req.user ?? '',
    [LABEL.config]: configHash(req),
    [LABEL.labelKeys]: Object.keys(extra).sort().join(','),
    ...(configFiles && configFiles.length > 0 ? { [CONFIG_FILES_LABEL]: JSON.stringify(configFiles) } : {}),
  };
}

/** The caller's labels on a container: the recorded keys, or every non-agent label for older containers. */
export function callerLabels(labels: Readonly<Record<string, string>>): Record<string, string> {
  const recorded = labels[LABEL.labelKeys];
  const keys =
    recorded !== undefined
      ? recorded.split(',').filter((k) => k !== '')
      : Object.keys(labels).filter((k) => !k.startsWith(RESERVED_LABEL_PREFIX));
  const out: Record<string, string> = {};
  for (const k of keys) if (labels[k] !== undefined) out[k] = labels[k];
  return out;
}

/** The user fixed at create: the recorded one ('' = image default), else what Docker shows. */
export function recordedUser(labels: Readonly<Record<string, string>>, configUser: string): string {
  return labels[LABEL.user] ?? configUser;
}
