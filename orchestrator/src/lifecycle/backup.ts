// Backups, pure: online save over RCON vs. stop first, the stop-with-backup
// failure policy, and backup ids stable across retries (docs/lifecycle.md "Backups and restore").

import type { Command, JsonObject, TemplateSpec } from '../domain/index.js';
import { AppError } from '../shared/errors.js';

export const FAILURE_POLICIES = ['abort_stop', 'stop_without_backup', 'force_stop_after_timeout'] as const;
export type FailurePolicy = (typeof FAILURE_POLICIES)[number];

export interface StopBackupOptions {
  automatic?: boolean;
  backup?: boolean;
  failurePolicy?: FailurePolicy;
}

/**
 * The stop payload, pure: an automatic stop with a backup defaults to the safe
 * `abort_stop`; a manual stop that asks for a backup must choose explicitly.
 */
export function stopBackupPayload(o: StopBackupOptions): JsonObject {
  if (!o.backup) return o.automatic ? { automatic: true } : {};
  if (o.failurePolicy !== undefined && !FAILURE_POLICIES.includes(o.failurePolicy)) {
    throw new AppError('VALIDATION_FAILED', `failurePolicy must be one of ${FAILURE_POLICIES.join(', ')}`);
  }
  if (!o.automatic && o.failurePolicy === undefined) {
    throw new AppError('VALIDATION_FAILED', `a manual stop with a backup needs an explicit failurePolicy (${FAILURE_POLICIES.join(', ')})`);
  }
  return { backup: true, automatic: Boolean(o.automatic), failurePolicy: o.failurePolicy ?? 'abort_stop' };
}

/**
 * Whether an action keeps the instance's state until its worker runs: a stop
 * with a backup does (its worker moves to `backup` or `stopping` as the backup
 * mode says), whoever asks for it — the operator, the idle tiers or a schedule.
 */
export function entersOnDispatch(action: string, payload: JsonObject | undefined): boolean {
  return action === 'stop' && payload?.backup === true;
}

/** How a backup of this instance is taken now: save over RCON while running, stop first, or just archive. */
export function backupMode(
  template: TemplateSpec | undefined,
  running: boolean,
  hasRconPassword: boolean,
): 'online_save' | 'stop_first' | 'offline' {
  if (!running) return 'offline';
  if (template?.backup?.onlineSave && template.stop.rcon && hasRconPassword) return 'online_save';
  return 'stop_first';
}

/** A backup id stable across retries of one command. */
export function backupIdFor(cmd: Command, prefix: string): string {
  const at = new Date(cmd.createdAt)
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${prefix}-${at}-${cmd.id.replace(/^cmd-/, '').slice(0, 8)}`;
}

/**
 * Why a manual backup would stop this running instance (docs/lifecycle.md "Backups and restore":
 * stopping for a manual backup is the caller's explicit choice), or undefined when it would not stop it.
 */
export function manualBackupStopReason(template: TemplateSpec | undefined, running: boolean, hasRconPassword: boolean): string | undefined {
  if (backupMode(template, running, hasRconPassword) !== 'stop_first') return undefined;
  if (!template?.backup?.onlineSave) return 'the template does not enable backup.onlineSave';
  if (!template.stop.rcon) return 'the template declares no stop.rcon';
  return `the instance has no RCON password in ${template.stop.rcon.passwordVariable}`;
}
