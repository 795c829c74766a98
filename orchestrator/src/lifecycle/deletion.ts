// Deletion, pure: normalises the requested scopes, checks the typed-name
// confirmation, validates every path, and orders the steps the agent runs.

import { AppError } from '../shared/errors.js';
import { fail, ok, type Checked } from './result.js';
import type { InstanceState } from './states.js';

export const DELETION_SCOPES = ['container', 'technical', 'player_data', 'backups'] as const;
export type DeletionScope = (typeof DELETION_SCOPES)[number];

/**
 * Reproducible things go by default; irreplaceable ones (player data, backups)
 * only when asked for and confirmed with the instance name.
 */
export const DEFAULT_SCOPES: readonly DeletionScope[] = ['container', 'technical'];
export const CONFIRMED_SCOPES: readonly DeletionScope[] = ['player_data', 'backups'];

export interface DeletionRequest {
  scopes?: unknown;
  confirm?: unknown;
}

/** Relative paths under the instance root, from the template. */
export interface TemplateDataPaths {
  /** World, player files: deleted only with `player_data`. */
  playerData: readonly string[];
  /** Caches, logs, libraries, generated config: deleted with `technical`. */
  technical: readonly string[];
}

export type DeletionStep =
  | { kind: 'unpause_container' }
  | { kind: 'stop_container'; graceful: true }
  | { kind: 'remove_container' }
  | { kind: 'delete_paths'; scope: 'technical' | 'player_data'; paths: string[] }
  | { kind: 'delete_instance_root' }
  | { kind: 'delete_backups' }
  | { kind: 'forget_instance' };

export interface DeletionPlan {
  scopes: DeletionScope[];
  /** True when player_data or backups are included: the audit entry records the confirmation. */
  audited: boolean;
  steps: DeletionStep[];
  /** What stays on disk after the plan completes. */
  retained: DeletionScope[];
}

export interface DeletableInstance {
  name: string;
  state: InstanceState;
}

const RUNNING_STATES: readonly InstanceState[] = ['starting', 'online', 'degraded', 'stopping', 'pausing', 'paused'];

/**
 * Validates one template data path: relative, `/`-separated, no `..`, no
 * empty, `.`-only or NUL segments. Returns it normalised (no `./`, no trailing `/`).
 */
export function validateRelativePath(path: unknown, field: string): Checked<string> {
  const bad = (why: string) => fail<string>(new AppError('UNSAFE_PATH', `${field} ${JSON.stringify(path)} ${why}`, { details: { field } }));
  if (typeof path !== 'string' || path.length === 0 || path.length > 1024)
    return bad('must be a non-empty relative path of at most 1024 characters');
  if (path.startsWith('/') || /^[a-zA-Z]:/.test(path) || path.includes('\\')) return bad('must be relative and use "/" separators');
  if (path.includes('\0')) return bad('must not contain NUL');
  const segments = path.split('/').filter((s, i, all) => !(s === '.' && i === 0) && !(s === '' && i === all.length - 1));
  if (segments.length === 0) return bad('must name something below the instance root, not the root itself');
  for (const s of segments) {
    if (s === '..') return bad('must not contain ".."');
    if (s === '' || s === '.') return bad('must not contain empty or "." segments');
  }
  return ok(segments.join('/'));
}

const contains = (ancestor: string, path: string): boolean => path === ancestor || path.startsWith(`${ancestor}/`);

function normaliseScopes(input: unknown): Checked<DeletionScope[]> {
  if (input === undefined) return ok([...DEFAULT_SCOPES]);
  if (!Array.isArray(input) || input.length === 0) {
    return fail(
      new AppError('VALIDATION_FAILED', `scopes must be a non-empty list of ${DELETION_SCOPES.join(', ')}`, {
        details: { field: 'scopes' },
      }),
    );
  }
  const chosen = new Set<DeletionScope>(['container']); // files are never deleted under a live container
  for (const s of input) {
    if (!(DELETION_SCOPES as readonly unknown[]).includes(s)) {
      return fail(
        new AppError('VALIDATION_FAILED', `unknown deletion scope ${JSON.stringify(s)}; use ${DELETION_SCOPES.join(', ')}`, {
          details: { field: 'scopes' },
        }),
      );
    }
    chosen.add(s as DeletionScope);
  }
  return ok(DELETION_SCOPES.filter((s) => chosen.has(s)));
}

function validatePaths(list: readonly string[], field: string): Checked<string[]> {
  const out: string[] = [];
  for (const p of list) {
    const checked = validateRelativePath(p, field);
    if (!checked.ok) return checked;
    out.push(checked.value);
  }
  return ok([...new Set(out)]);
}

/** Plans `DELETE /instances/:id`. `container` is always included. */
export function planDeletion(instance: DeletableInstance, request: DeletionRequest, paths: TemplateDataPaths): Checked<DeletionPlan> {
  const normalised = normaliseScopes(request.scopes);
  if (!normalised.ok) return normalised;
  const scopes = normalised.value;
  const needsConfirm = scopes.filter((s) => CONFIRMED_SCOPES.includes(s));
  if (needsConfirm.length > 0 && request.confirm !== instance.name) {
    return fail(
      new AppError(
        'CONFIRMATION_REQUIRED',
        `deleting ${needsConfirm.join(' and ')} cannot be undone: send "confirm" equal to the instance name ${JSON.stringify(instance.name)}`,
        {
          details: { scopes: needsConfirm },
        },
      ),
    );
  }
  const player = validatePaths(paths.playerData, 'dataPaths.playerData');
  if (!player.ok) return player;
  const technical = validatePaths(paths.technical, 'dataPaths.technical');
  if (!technical.ok) return technical;

  const has = (s: DeletionScope) => scopes.includes(s);
  // A technical path that holds player data would delete it without confirmation.
  if (has('technical') && !has('player_data')) {
    for (const t of technical.value) {
      const hit = player.value.find((p) => contains(t, p));
      if (hit !== undefined) {
        return fail(
          new AppError(
            'UNSAFE_PATH',
            `technical path ${JSON.stringify(t)} contains player data path ${JSON.stringify(hit)}; fix the template's data paths`,
            {
              details: { field: 'dataPaths.technical' },
            },
          ),
        );
      }
    }
  }

  const steps: DeletionStep[] = [];
  if (instance.state === 'paused' || instance.state === 'pausing') steps.push({ kind: 'unpause_container' });
  if (RUNNING_STATES.includes(instance.state)) steps.push({ kind: 'stop_container', graceful: true });
  steps.push({ kind: 'remove_container' });
  if (has('technical') && has('player_data')) {
    steps.push({ kind: 'delete_instance_root' });
  } else {
    if (has('technical') && technical.value.length > 0) steps.push({ kind: 'delete_paths', scope: 'technical', paths: technical.value });
    if (has('player_data') && player.value.length > 0) steps.push({ kind: 'delete_paths', scope: 'player_data', paths: player.value });
  }
  if (has('backups')) steps.push({ kind: 'delete_backups' });
  // The record always goes last: retained files stay under the instance root on
  // the host (never removed by recovery for a persistent group) and are named in the answer and audit.
  steps.push({ kind: 'forget_instance' });
  const retained = DELETION_SCOPES.filter((s) => !has(s));
  return ok({ scopes, audited: needsConfirm.length > 0, steps, retained });
}
