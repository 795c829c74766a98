// What egg templates need of the agent: configuration edits applied to files
// of the instance directory before each start (never following a symlink out
// of it), install scripts in their own container as Wings runs them, and lines
// written to stdin.

import { constants } from 'node:fs';
import { mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { CreateInstanceBody, InstallAnswer, InstallBody } from '../contracts/agent-api.js';
import type { ConfigParser } from '../domain/template.js';
import { applyConfigEdits } from '../eggs/config-files.js';
import { AppError } from '../shared/errors.js';
import { errnoCode, lstatOrUndefined } from '../shared/fs-errors.js';
import { checkImportPath } from './relative-path.js';
import { giveTo } from './runtime-directories.js';
import { runtimeAbility, type ContainerRuntime, type OneOffRuntime, type StdinRuntime } from './runtime.js';

export type ConfigFilePlan = NonNullable<CreateInstanceBody['configFiles']>[number];
/** The planned edits travel with the container (agent-owned label), so every start applies them. */
export const CONFIG_FILES_LABEL = 'orchestrator.config-files';
/** Install containers: never `orchestrator.managed`, so inventory and cleanup of game containers never see them. */
export const INSTALL_LABEL = 'orchestrator.install';
const MAX_CONFIG_FILE_BYTES = 4 * 1024 * 1024;
const MAX_INSTALL_OUTPUT_BYTES = 16 * 1024;

/** Wings' server directory: mounted there, and the working directory, under `layout: wings`. */
export const WINGS_SERVER_DIRECTORY = '/home/container';
/** The reference the orchestrator leaves in config-file values for the agent to fill (src/eggs/startup.ts). */
const PUBLISHED_IP = '{{server.build.default.ip}}';

/** The address game ports are published on, as a server is told it: an unspecified bind address (`::` too) is 0.0.0.0. */
export function publishedIp(bindAddress: string): string {
  return bindAddress === '0.0.0.0' || bindAddress === '::' ? '0.0.0.0' : bindAddress;
}

/** Wings' own variables the agent knows: after the request's env, so they win (as on Wings). */
export function wingsAgentEnv(ip: string, timezone: string): Record<string, string> {
  return { SERVER_IP: ip, TZ: timezone };
}

/** The planned edits with the published address filled in where the orchestrator left its reference. */
export function fillPublishedIp(plans: readonly ConfigFilePlan[], ip: string): ConfigFilePlan[] {
  return plans.map((p) => ({ ...p, edits: p.edits.map((e) => ({ ...e, value: e.value.replaceAll(PUBLISHED_IP, ip) })) }));
}

export function configFilesOf(labels: Readonly<Record<string, string>>): ConfigFilePlan[] {
  const raw = labels[CONFIG_FILES_LABEL];
  return raw ? (JSON.parse(raw) as ConfigFilePlan[]) : [];
}

/** Every parent below root is a real directory (created when missing), never a symlink. */
async function safeParent(root: string, rel: string): Promise<void> {
  const parts = rel.split('/').slice(0, -1);
  let at = root;
  for (const part of parts) {
    at = join(at, part);
    const st = await lstatOrUndefined(at);
    if (st === undefined) await mkdir(at, { mode: 0o755 });
    else if (!st.isDirectory())
      throw new AppError('UNSAFE_PATH', `config file path ${rel}: ${part} is not a directory (symlinks are not followed)`);
  }
}

async function readNoFollow(path: string): Promise<string> {
  try {
    const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new AppError('UNSAFE_PATH', `${path} is not a regular file`);
      if (st.size > MAX_CONFIG_FILE_BYTES)
        throw new AppError('VALIDATION_FAILED', `${path} is larger than ${MAX_CONFIG_FILE_BYTES} bytes; not edited`);
      return await fh.readFile('utf8');
    } finally {
      await fh.close();
    }
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return '';
    if (errnoCode(err) === 'ELOOP') throw new AppError('UNSAFE_PATH', `${path} is a symlink; config edits never follow one`);
    throw err;
  }
}

/** Applies the edits inside `root` (the instance directory): written to a temp file, then renamed over the old one. */
export async function applyConfigFiles(
  root: string,
  plans: readonly ConfigFilePlan[],
  owner?: { uid: number; gid: number },
): Promise<string[]> {
  const changed: string[] = [];
  for (const plan of plans) {
    const rel = checkImportPath(plan.path);
    if (rel === '') throw new AppError('UNSAFE_PATH', `config file path ${JSON.stringify(plan.path)} names the instance directory itself`);
    await safeParent(root, rel);
    const target = join(root, rel);
    const before = await readNoFollow(target);
    let after: string;
    try {
      after = applyConfigEdits(plan.parser as ConfigParser, before, plan.edits);
    } catch (err) {
      throw new AppError('VALIDATION_FAILED', `config file ${rel} (${plan.parser}): ${(err as Error).message}`);
    }
    if (after === before) continue;
    const tmp = join(dirname(target), `.endercloud-edit-${process.pid}-${Date.now()}`);
    const fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
    try {
      await fh.writeFile(after, 'utf8');
      if (owner) await fh.chown(owner.uid, owner.gid);
    } finally {
      await fh.close();
    }
    await rename(tmp, target).catch(async (err: unknown) => {
      await unlink(tmp).catch(() => undefined);
      throw err;
    });
    changed.push(rel);
  }
  return changed;
}

export function stdinOf(runtime: ContainerRuntime): StdinRuntime {
  return runtimeAbility<StdinRuntime>(runtime, 'writeStdin', "write to a container's stdin");
}

/** Where an install script runs, as Wings lays it out. */
export const INSTALL_SCRIPT_PATH = '/mnt/install/install.sh';
const INSTALL_SERVER_DIRECTORY = '/mnt/server';
/** Install containers get at least this much memory (Wings' `installer_limits.memory` default). */
export const INSTALL_MIN_MEMORY_MB = 1024;
export const INSTALL_PIDS_LIMIT = 512;

/**
 * Runs an install script as Wings does: its own container of the install image, as root, the
 * script at /mnt/install/install.sh (put into the container, not mounted) run as
 * `entrypoint /mnt/install/install.sh`, the instance directory at /mnt/server, bounded by the
 * instance's limits and `timeoutMs`. The container is removed afterwards, also on failure.
 */
export async function runInstall(
  runtime: ContainerRuntime,
  spec: { name: string; hostPath: string; labels: Record<string, string>; onStarted?: (containerId: string) => void },
  body: InstallBody,
): Promise<InstallAnswer> {
  const runner = runtimeAbility<OneOffRuntime>(runtime, 'runOneOff', 'run install containers');
  await runtime.ensureImage(body.image, undefined, body.pull ?? 'missing');
  const started = Date.now();
  const memoryMb = Math.max(body.memoryMb ?? 0, INSTALL_MIN_MEMORY_MB);
  const result = await runner.runOneOff({
    name: spec.name,
    image: body.image,
    entrypoint: [body.entrypoint],
    command: [INSTALL_SCRIPT_PATH],
    // Windows line ends would make `bash` read `\r` as part of every command (Wings strips them too).
    files: [{ path: INSTALL_SCRIPT_PATH, content: body.script.replaceAll('\r\n', '\n'), mode: 0o755 }],
    env: Object.entries(body.env ?? {}),
    labels: spec.labels,
    hostPath: spec.hostPath,
    mountTarget: INSTALL_SERVER_DIRECTORY,
    user: '0:0',
    memoryBytes: memoryMb * 1024 * 1024,
    ...(body.cpus ? { cpus: body.cpus } : {}),
    pidsLimit: INSTALL_PIDS_LIMIT,
    timeoutMs: body.timeoutMs,
    maxOutputBytes: MAX_INSTALL_OUTPUT_BYTES,
    ...(spec.onStarted ? { onStarted: spec.onStarted } : {}),
  });
  return { ...result, durationMs: Date.now() - started };
}

/**
 * Gives every entry under `root` (and root itself) to the server container's user after an
 * install ran as root. lchown only: a symlink the script planted is re-owned itself, never
 * followed, and a symlinked directory is not descended into.
 */
export async function ownTree(root: string, owner: { uid: number; gid: number }): Promise<number> {
  let count = 0;
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      await giveTo(path, owner);
      count += 1;
      if (entry.isDirectory()) await walk(path);
    }
  };
  await giveTo(root, owner);
  await walk(root);
  return count + 1;
}
