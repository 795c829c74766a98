// Pending changes, pure: which setting changes apply now and which wait for one
// controlled container replacement; image/label changes; the immutable user;
// redacted, bounded configuration revisions.

import { AppError } from '../shared/errors.js';
import { fail, ok, type Checked } from './result.js';

type SettingValue = string | number | boolean | null;
type Settings = Record<string, SettingValue>;

/** Keys chosen at creation that no edit may change (permissions of persistent files depend on them). */
export const IMMUTABLE_KEYS: readonly string[] = ['user'];

function immutableError(key: string): AppError {
  return new AppError(
    'IMMUTABLE',
    `${key} is chosen when the instance is created and can never be changed: back up, create a new instance with the new ${key}, and restore into it`,
    {
      details: { field: key },
    },
  );
}

// ---- image tag and label changes (desired vs applied container config) ----

export interface ContainerConfigSpec {
  image: string;
  labels: Record<string, string>;
}

export type ContainerChangeMode = 'immediate' | 'next_start';

export interface ContainerChangePlan {
  desiredConfig: ContainerConfigSpec;
  /** Set for `next_start`: the next explicit start pulls and replaces. */
  containerConfigPending: boolean;
  /** `immediate`: run planReplacement now (stop, replace, restore the prior intent). */
  replaceNow: boolean;
}

/** Labels EnderCloud owns: ownership and reconciliation depend on them. */
export const RESERVED_LABEL_PREFIX = 'orchestrator.';
const IMAGE_REF = /^[a-z0-9][a-z0-9._\-/:@]*$/i;

export function planContainerConfigChange(
  applied: ContainerConfigSpec,
  desired: ContainerConfigSpec,
  change: { image?: string; labels?: Record<string, string | null> },
  mode: ContainerChangeMode,
): Checked<ContainerChangePlan> {
  if (change.image !== undefined && (change.image.length > 512 || !IMAGE_REF.test(change.image))) {
    return fail(
      new AppError('VALIDATION_FAILED', `image ${JSON.stringify(change.image)} is not a valid image reference`, {
        details: { field: 'image' },
      }),
    );
  }
  const labels = { ...desired.labels };
  for (const [key, value] of Object.entries(change.labels ?? {})) {
    if (key.startsWith(RESERVED_LABEL_PREFIX)) {
      return fail(
        new AppError('VALIDATION_FAILED', `label ${key} is managed by EnderCloud and cannot be set`, {
          details: { field: `labels.${key}` },
        }),
      );
    }
    if (value === null) delete labels[key];
    else labels[key] = value;
  }
  const next: ContainerConfigSpec = { image: change.image ?? desired.image, labels };
  const differs = next.image !== applied.image || !sameLabels(next.labels, applied.labels);
  return ok({
    desiredConfig: next,
    containerConfigPending: differs && mode === 'next_start',
    replaceNow: differs && mode === 'immediate',
  });
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}

export type ReplacementStep =
  | { kind: 'pull_image'; image: string }
  | { kind: 'stop_container'; graceful: true }
  | { kind: 'remove_container'; keepData: true }
  | { kind: 'create_container'; image: string; labels: Record<string, string>; settings: Settings }
  | { kind: 'mark_applied' }
  | { kind: 'start_container' }
  | { kind: 'await_readiness' };

export interface ReplaceableInstance {
  /** The intent to restore after the replacement: a stopped instance stays stopped. */
  desiredState: 'running' | 'stopped' | 'paused' | 'deleted';
  containerRunning: boolean;
  appliedConfig: ContainerConfigSpec;
  desiredConfig: ContainerConfigSpec;
  desiredSettings: Settings;
}

/**
 * One controlled replacement: pull first (a failed pull changes nothing), stop
 * gracefully, swap the container keeping every bind-mounted data path, record
 * the config as applied, then restore the prior running/stopped intent.
 */
export function planReplacement(instance: ReplaceableInstance): ReplacementStep[] {
  const steps: ReplacementStep[] = [];
  if (instance.desiredConfig.image !== instance.appliedConfig.image)
    steps.push({ kind: 'pull_image', image: instance.desiredConfig.image });
  if (instance.containerRunning) steps.push({ kind: 'stop_container', graceful: true });
  steps.push(
    { kind: 'remove_container', keepData: true },
    {
      kind: 'create_container',
      image: instance.desiredConfig.image,
      labels: instance.desiredConfig.labels,
      settings: instance.desiredSettings,
    },
    { kind: 'mark_applied' },
  );
  if (instance.desiredState === 'running') steps.push({ kind: 'start_container' }, { kind: 'await_readiness' });
  return steps;
}

/** What an explicit start runs: a replacement when changes wait for it, else a plain start. */
export function planStart(
  instance: Omit<ReplaceableInstance, 'desiredState'> & { containerConfigPending: boolean; pendingSettings: number },
): ReplacementStep[] {
  if (instance.containerConfigPending || instance.pendingSettings > 0) return planReplacement({ ...instance, desiredState: 'running' });
  return [{ kind: 'start_container' }, { kind: 'await_readiness' }];
}

// ---- the container user: chosen at creation, never edited ----

export type ContainerUserSpec = { mode: 'endercloud' } | { mode: 'custom'; uid: number; gid: number } | { mode: 'image' };

/** The uid:gid of the `endercloud` user mode (the unprivileged default). */
export const ENDERCLOUD_USER = { uid: 1000, gid: 1000 } as const;

export function validateContainerUser(input: unknown): Checked<ContainerUserSpec> {
  const bad = (message: string) =>
    fail<ContainerUserSpec>(new AppError('VALIDATION_FAILED', `user ${message}`, { details: { field: 'user' } }));
  if (input === undefined) return ok({ mode: 'endercloud' });
  if (typeof input !== 'object' || input === null) return bad('must be an object with mode endercloud, custom or image');
  const spec = input as { mode?: unknown; uid?: unknown; gid?: unknown };
  if (spec.mode === 'endercloud' || spec.mode === 'image') return ok({ mode: spec.mode });
  if (spec.mode !== 'custom') return bad(`mode must be endercloud, custom or image (got ${JSON.stringify(spec.mode)})`);
  for (const id of ['uid', 'gid'] as const) {
    const v = spec[id];
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 2_147_483_647)
      return bad(`${id} must be an integer from 0 to 2147483647`);
  }
  return ok({ mode: 'custom', uid: spec.uid as number, gid: spec.gid as number });
}

/** Docker's `User` field for the spec; undefined keeps the image's own user. */
export function containerUserString(spec: ContainerUserSpec): string | undefined {
  if (spec.mode === 'image') return undefined;
  const { uid, gid } = spec.mode === 'custom' ? spec : ENDERCLOUD_USER;
  return `${uid}:${gid}`;
}

/** Refuses any attempt to change the user after creation (the PATCH guard). */
export function assertUserUnchanged(current: ContainerUserSpec, requested: unknown): void {
  if (requested === undefined) return;
  if (JSON.stringify(current) !== JSON.stringify(requested)) throw immutableError('user');
}

// ---- configuration revisions ----

export const REDACTED = '[redacted]';
export const REVISIONS_KEPT = 20;

/**
 * A deep copy with every value under a secret key replaced, at any depth, and
 * `KEY=value` strings (Docker env lists) redacted when KEY is secret. Applied
 * to every revision, view, log line and API answer.
 */
export function redactSecrets<T>(config: T, secretKeys: readonly string[]): T {
  const secrets = new Set(secretKeys);
  const walk = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(walk);
    if (typeof value === 'string') {
      const eq = value.indexOf('=');
      return eq > 0 && secrets.has(value.slice(0, eq)) ? `${value.slice(0, eq)}=${REDACTED}` : value;
    }
    if (typeof value === 'object' && value !== null) {
      return Object.fromEntries(
        Object.entries(value).map(([k, v]) => [k, secrets.has(k) && v !== null && v !== undefined ? REDACTED : walk(v)]),
      );
    }
    return value;
  };
  return walk(config) as T;
}

/**
 * Keeps the newest `keep` revisions plus any pinned ones (the revision the
 * container currently runs, so pending changes can always be diffed/rolled back).
 */
export function pruneRevisions<R extends { revision: number }>(
  revisions: readonly R[],
  keep = REVISIONS_KEPT,
  pinned: readonly number[] = [],
): { keep: R[]; drop: R[] } {
  const sorted = [...revisions].sort((a, b) => b.revision - a.revision);
  const kept = new Set(sorted.slice(0, keep).map((r) => r.revision));
  for (const p of pinned) kept.add(p);
  return {
    keep: sorted.filter((r) => kept.has(r.revision)).reverse(),
    drop: sorted.filter((r) => !kept.has(r.revision)).reverse(),
  };
}
