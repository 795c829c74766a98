// Settings, image and label changes, pure: a PATCH becomes immediate values
// plus pending changes (desired vs applied); one replacement later folds every
// pending change into the container configuration at once.

import type { ContainerConfig, Instance, JsonObject, PendingChange, TemplateSpec } from '../../domain/index.js';
import { unwrap } from '../../lifecycle/result.js';
import { IMMUTABLE_KEYS, REDACTED, assertUserUnchanged, planContainerConfigChange } from '../../lifecycle/settings.js';
import { AppError } from '../../shared/errors.js';
import { normalizeValue, valueProblem } from '../../contracts/catalog-rules.js';
import { PENDING_SECRET_PREFIX } from './instance-config.js';

export interface SettingsPatchBody {
  settings?: Record<string, unknown>;
  image?: string;
  labels?: Record<string, string | null>;
  /** How image/label changes apply: now (stop, replace, restore intent) or at the next explicit start. */
  mode?: 'immediate' | 'next_start';
  /** Apply every pending change now through one replacement. */
  applyNow?: boolean;
  user?: unknown;
}

export interface SettingsPatchPlan {
  patch: Pick<Instance, 'settings' | 'secretSettings' | 'pendingChanges' | 'containerConfigPending' | 'containerConfig'>;
  /** Keys whose value took effect at once. */
  applied: string[];
  /** Run the `apply-settings` action (one controlled replacement) now. */
  replaceNow: boolean;
}

function upsert(list: PendingChange[], change: PendingChange): PendingChange[] {
  return [...list.filter((c) => c.key !== change.key), change];
}

/** Plans a PATCH /instances/:id/settings; throws VALIDATION_FAILED / IMMUTABLE naming the field. */
export function planSettingsPatch(
  instance: Instance,
  template: TemplateSpec | undefined,
  body: SettingsPatchBody,
  now: number,
): SettingsPatchPlan {
  assertUserUnchanged(instance.user, body.user);
  const settings: JsonObject = { ...instance.settings };
  const secretSettings = { ...instance.secretSettings };
  const env = { ...instance.containerConfig.env };
  let pending = [...instance.pendingChanges];
  const applied: string[] = [];
  for (const [key, givenValue] of Object.entries(body.settings ?? {})) {
    if (IMMUTABLE_KEYS.includes(key)) assertUserUnchanged(instance.user, givenValue);
    const variable = template?.variables.find((v) => v.name === key);
    if (!variable)
      throw new AppError('VALIDATION_FAILED', `body/settings/${key} is not a setting of this instance's template`, {
        details: { field: `settings.${key}` },
      });
    // An egg boolean is stored in the egg's own spelling (`true` → `1` for an egg that tests "1").
    const value = normalizeValue(variable, givenValue);
    const problem = valueProblem(variable.type, value, variable.validation ?? {});
    if (problem) throw new AppError('VALIDATION_FAILED', `body/settings/${key} ${problem}`, { details: { field: `settings.${key}` } });
    const envName = variable.env ?? variable.name;
    if (variable.secret) {
      // A secret reaches the container only through its env: always at the next replacement.
      secretSettings[`${PENDING_SECRET_PREFIX}${key}`] = String(value);
      pending = upsert(pending, { key: `settings.${key}`, value: REDACTED, mode: 'restart_required', requestedAt: now, secret: true });
    } else if ((variable.apply ?? 'restart_required') === 'immediate') {
      if (instance.settings[key] === value) continue; // already in effect: nothing to re-apply
      settings[key] = value as JsonObject[string];
      env[envName] = String(value);
      applied.push(key);
    } else if (instance.settings[key] === value) {
      pending = pending.filter((c) => c.key !== `settings.${key}`);
    } else {
      pending = upsert(pending, { key: `settings.${key}`, value: value as JsonObject[string], mode: 'restart_required', requestedAt: now });
    }
  }
  let containerConfigPending = instance.containerConfigPending;
  let replaceNow = body.applyNow === true;
  if (body.image !== undefined || body.labels !== undefined) {
    const mode = body.mode ?? 'next_start';
    const current = { image: instance.containerConfig.image, labels: instance.containerConfig.labels };
    const change = unwrap(
      planContainerConfigChange(
        current,
        current,
        { ...(body.image !== undefined ? { image: body.image } : {}), ...(body.labels ? { labels: body.labels } : {}) },
        mode,
      ),
    );
    if (body.image !== undefined) {
      pending =
        body.image === current.image
          ? pending.filter((c) => c.key !== 'image')
          : upsert(pending, { key: 'image', value: body.image, mode: 'next_start', requestedAt: now });
    }
    for (const [key, value] of Object.entries(body.labels ?? {})) {
      const same = value === null ? !(key in current.labels) : current.labels[key] === value;
      pending = same
        ? pending.filter((c) => c.key !== `labels.${key}`)
        : upsert(pending, { key: `labels.${key}`, value, mode: 'next_start', requestedAt: now });
    }
    const hasConfigChange = pending.some((c) => c.mode === 'next_start');
    containerConfigPending = hasConfigChange && mode === 'next_start';
    if (change.replaceNow || (mode === 'immediate' && hasConfigChange)) replaceNow = true;
  }
  if (replaceNow && pending.length === 0) replaceNow = false;
  return {
    patch: {
      settings,
      secretSettings,
      pendingChanges: pending,
      containerConfigPending,
      containerConfig: { ...instance.containerConfig, env },
    },
    applied,
    replaceNow,
  };
}

/** The configuration after folding in every pending change (what one replacement creates). */
export function applyPendingChanges(
  instance: Instance,
  template: TemplateSpec | undefined,
): {
  containerConfig: ContainerConfig;
  settings: JsonObject;
  secretSettings: Record<string, string>;
} {
  const config: ContainerConfig = {
    ...instance.containerConfig,
    env: { ...instance.containerConfig.env },
    labels: { ...instance.containerConfig.labels },
  };
  const settings: JsonObject = { ...instance.settings };
  const secretSettings = { ...instance.secretSettings };
  for (const change of instance.pendingChanges) {
    if (change.key === 'image' && typeof change.value === 'string') {
      config.image = change.value;
    } else if (change.key.startsWith('labels.')) {
      const label = change.key.slice('labels.'.length);
      if (change.value === null) delete config.labels[label];
      else config.labels[label] = String(change.value);
    } else if (change.key.startsWith('settings.')) {
      const name = change.key.slice('settings.'.length);
      const variable = template?.variables.find((v) => v.name === name);
      if (change.secret) {
        const value = secretSettings[`${PENDING_SECRET_PREFIX}${name}`];
        delete secretSettings[`${PENDING_SECRET_PREFIX}${name}`];
        if (value !== undefined) secretSettings[name] = value;
      } else {
        settings[name] = change.value;
        config.env[variable?.env ?? name] = String(change.value);
      }
    }
  }
  return { containerConfig: config, settings, secretSettings };
}
