// ectl's configuration: named contexts (API URL + token) in the user's config
// dir (0600 file in a 0700 dir), overridden by ENDERCLOUD_URL / ENDERCLOUD_TOKEN.
// The only ectl module that reads process.env.

import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Env } from '../shared/config.js';
import { CliError } from './errors.js';

export interface Context {
  url: string;
  token?: string;
}

export interface CliConfigFile {
  currentContext?: string;
  contexts: Record<string, Context>;
}

/** What ectl reads from its environment, gathered once in index.ts. */
export interface CliEnvironment {
  configPath: string;
  urlOverride: string | undefined;
  tokenOverride: string | undefined;
  /**
   * The directory relative paths (layers push, apply -f, imports) are resolved
   * against: the caller's, also under `npm run ectl` (npm runs scripts from the
   * package root and keeps the caller's directory in INIT_CWD). Default: process.cwd().
   */
  cwd?: string;
}

export function cliEnvironment(env: Env = process.env, home: string = homedir()): CliEnvironment {
  const base = env.XDG_CONFIG_HOME?.trim() ? env.XDG_CONFIG_HOME : join(home, '.config');
  return {
    configPath: join(base, 'endercloud', 'config.json'),
    urlOverride: env.ENDERCLOUD_URL?.trim() || undefined,
    tokenOverride: env.ENDERCLOUD_TOKEN?.trim() || undefined,
    cwd: callerDirectory(env, process.cwd()),
  };
}

/**
 * INIT_CWD only when npm runs this very script (`npm run ectl`): inside another
 * package's script that cd's elsewhere, INIT_CWD would be the wrong directory.
 */
export function callerDirectory(env: Env, cwd: string): string {
  const viaNpmRun = env.npm_lifecycle_event === 'ectl' && env.npm_package_name === 'endercloud';
  return viaNpmRun && env.INIT_CWD?.trim() ? env.INIT_CWD : cwd;
}

export const CONTEXT_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

/** Normalises an API base URL: http(s), no trailing slash, no `/api/v1` suffix. */
export function normaliseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError('usage', `"${value}" is not an absolute URL (e.g. http://127.0.0.1:8080)`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new CliError('usage', `"${value}" must be an http or https URL`);
  return value.replace(/\/+$/, '').replace(/\/api\/v1$/, '');
}

export async function readConfigFile(path: string): Promise<CliConfigFile> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { contexts: {} };
    throw err;
  }
  try {
    const parsed = JSON.parse(text) as Partial<CliConfigFile>;
    return { currentContext: parsed.currentContext, contexts: parsed.contexts ?? {} };
  } catch {
    throw new CliError('usage', `${path} is not valid JSON; fix or delete it and run ectl login again`);
  }
}

/** Writes atomically: a 0600 temp file renamed over the config, dir forced to 0700. */
export async function writeConfigFile(path: string, config: CliConfigFile): Promise<void> {
  const dir = dirname(path);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  const tmp = `${path}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, path);
}

export interface ResolvedTarget {
  url: string;
  token: string | undefined;
  contextName: string | undefined;
}

/** Picks the context (flag, else current) and applies the env overrides. */
export function resolveTarget(config: CliConfigFile, env: CliEnvironment, contextFlag?: string): ResolvedTarget {
  const name = contextFlag ?? config.currentContext;
  const ctx = name !== undefined ? config.contexts[name] : undefined;
  if (contextFlag !== undefined && !ctx) throw new CliError('usage', `no context named "${contextFlag}" (see ectl context ls)`);
  const url = env.urlOverride ?? ctx?.url;
  if (!url) throw new CliError('usage', 'no orchestrator configured: run ectl login --url URL --token TOKEN, or set ENDERCLOUD_URL');
  return { url: normaliseUrl(url), token: env.tokenOverride ?? ctx?.token, contextName: ctx ? name : undefined };
}
