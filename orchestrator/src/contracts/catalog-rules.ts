// Catalog rules, pure: turns a validated template/group body into the stored
// spec (defaults filled), enforcing what JSON schema cannot say: unique names,
// defaults that fit their variable, secrets without stored values, safe paths.

import { compileDenylist } from '../eggs/file-denylist.js';
import type { GroupCaps, ScalingPolicy, TemplateSpec, VariableSpec, Variant } from '../domain/index.js';
import { validateRelativePath } from '../lifecycle/deletion.js';
import { validateReadinessSpec } from '../lifecycle/readiness.js';
import { RESERVED_LABEL_PREFIX, validateContainerUser } from '../lifecycle/settings.js';
import { unwrap } from '../lifecycle/result.js';
import { parseIdleTiers, parseScalingPolicy, type IdleTier } from '../provisioning/scaling-policy.js';
import { parseBackupPolicy, type BackupPolicy } from './backup-policy.js';
import { AppError } from '../shared/errors.js';
import { capAddProblem } from '../shared/capabilities.js';
import { configKeyProblem } from '../eggs/config-keys.js';
import { normalizeBoolean } from '../eggs/boolean-values.js';
import { EULA_VARIABLE } from '../eggs/features.js';
import type { GroupBody, TemplateBody } from './catalog.js';

export const DEFAULT_CONTAINER_PORT = 25565;
export const DEFAULT_STOP_TIMEOUT_MS = 30_000;
export const DEFAULT_INSTALL_TIMEOUT_MS = 600_000;
/** A TCP accept within two minutes: works for any image; Minecraft templates should say `minecraft`. */
export const DEFAULT_READINESS = { kind: 'tcp', startupTimeoutMs: 120_000 } as const;

function invalid(field: string, message: string): AppError {
  return new AppError('VALIDATION_FAILED', `body/${field} ${message}`, { details: { field } });
}

function checkVariable(v: TemplateBody['variables'] extends (infer T)[] | undefined ? T : never, i: number): VariableSpec {
  const f = `variables/${i}`;
  const rules = v.validation ?? {};
  if (v.type === 'enum' && !rules.values) throw invalid(`${f}/validation/values`, 'is required for an enum variable');
  if (v.type !== 'enum' && rules.values) throw invalid(`${f}/validation/values`, `only applies to enum variables (this one is ${v.type})`);
  if (rules.min !== undefined && rules.max !== undefined && rules.min > rules.max)
    throw invalid(`${f}/validation`, 'min must not exceed max');
  if (rules.minLength !== undefined && rules.maxLength !== undefined && rules.minLength > rules.maxLength)
    throw invalid(`${f}/validation`, 'minLength must not exceed maxLength');
  if (rules.pattern !== undefined) {
    try {
      new RegExp(rules.pattern);
    } catch (err) {
      throw invalid(`${f}/validation/pattern`, `does not compile: ${(err as Error).message}`);
    }
  }
  if (v.secret && v.default !== undefined) {
    throw invalid(
      `${f}/default`,
      'must not be set on a secret variable: secret values are never stored in a template (declare it, and give the value per instance)',
    );
  }
  if (v.default !== undefined) {
    const problem = valueProblem(v.type, v.default, rules);
    if (problem) throw invalid(`${f}/default`, problem);
  }
  if (v.booleanValues) {
    const b = v.booleanValues;
    if (v.type !== 'enum' || b.true === b.false || !rules.values?.includes(b.true) || !rules.values.includes(b.false)) {
      throw invalid(`${f}/booleanValues`, 'needs an enum variable whose values include both (and two different values)');
    }
  }
  const out: VariableSpec = { name: v.name, type: v.type };
  for (const key of [
    'description',
    'env',
    'default',
    'required',
    'secret',
    'validation',
    'apply',
    'operatorOnly',
    'hidden',
    'booleanValues',
  ] as const) {
    if (v[key] !== undefined) (out as unknown as Record<string, unknown>)[key] = v[key];
  }
  return out;
}

/** A value as it is stored: an egg boolean in its own spelling (`true` → `1` where the egg says 1/0); anything else unchanged. */
export function normalizeValue(variable: Pick<VariableSpec, 'booleanValues'>, value: unknown): unknown {
  return variable.booleanValues ? normalizeBoolean(variable.booleanValues, value) : value;
}

/** Why a value does not fit a variable's type and rules, or undefined when it does. */
export function valueProblem(
  type: VariableSpec['type'],
  value: unknown,
  rules: NonNullable<VariableSpec['validation']>,
): string | undefined {
  switch (type) {
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be a boolean';
    case 'integer':
    case 'number': {
      if (typeof value !== 'number' || !Number.isFinite(value)) return `must be a ${type}`;
      if (type === 'integer' && !Number.isInteger(value)) return 'must be an integer';
      if (rules.min !== undefined && value < rules.min) return `must be >= ${rules.min}`;
      if (rules.max !== undefined && value > rules.max) return `must be <= ${rules.max}`;
      return undefined;
    }
    case 'enum':
      return typeof value === 'string' && (rules.values ?? []).includes(value)
        ? undefined
        : `must be one of ${(rules.values ?? []).join(', ')}`;
    case 'string': {
      if (typeof value !== 'string') return 'must be a string';
      if (rules.minLength !== undefined && value.length < rules.minLength) return `must be at least ${rules.minLength} characters`;
      if (rules.maxLength !== undefined && value.length > rules.maxLength) return `must be at most ${rules.maxLength} characters`;
      if (rules.pattern !== undefined && !new RegExp(rules.pattern).test(value)) return `must match ${rules.pattern}`;
      return undefined;
    }
  }
}

/** The stored template spec for a body, every default filled (so equal meaning hashes equal). */
export function normalizeTemplate(body: TemplateBody): TemplateSpec {
  const variables = (body.variables ?? []).map(checkVariable);
  const names = new Set<string>();
  const envs = new Set<string>();
  variables.forEach((v, i) => {
    if (names.has(v.name)) throw invalid(`variables/${i}/name`, `${v.name} is declared twice`);
    names.add(v.name);
    const env = v.env ?? v.name;
    if (envs.has(env)) throw invalid(`variables/${i}/env`, `${env} is already set by another variable`);
    envs.add(env);
  });
  const rcon = body.stop?.rcon;
  if (rcon && !names.has(rcon.passwordVariable))
    throw invalid('stop/rcon/passwordVariable', `names ${rcon.passwordVariable}, which is not a declared variable`);
  const readiness = validateReadinessSpec(body.readiness ?? DEFAULT_READINESS);
  if (!readiness.ok) throw new AppError('VALIDATION_FAILED', `body/${readiness.error.message}`, { details: readiness.error.details });
  const user = unwrap(validateContainerUser(body.user));
  const paths = (list: readonly string[], field: string) =>
    list.map((p, i) => {
      const checked = validateRelativePath(p, `body/${field}/${i}`);
      if (!checked.ok) throw new AppError('VALIDATION_FAILED', checked.error.message, { details: checked.error.details });
      return checked.value;
    });
  const dataPaths = paths(body.dataPaths ?? [], 'dataPaths');
  const technicalPaths = paths(body.technicalPaths ?? [], 'technicalPaths');
  const backupPaths = body.backup?.paths ? [...new Set(paths(body.backup.paths, 'backup/paths'))] : undefined;
  if (body.backup?.onlineSave && !rcon) throw invalid('backup/onlineSave', 'needs stop/rcon: the save commands are sent over RCON');
  const crash = body.crashLoop;
  if (crash?.backoffInitialMs !== undefined && crash.backoffMaxMs !== undefined && crash.backoffInitialMs > crash.backoffMaxMs) {
    throw invalid('crashLoop/backoffInitialMs', 'must not exceed backoffMaxMs');
  }
  for (const key of Object.keys(body.labels ?? {})) {
    if (key.startsWith(RESERVED_LABEL_PREFIX)) throw invalid(`labels/${key}`, `uses the reserved prefix ${RESERVED_LABEL_PREFIX}`);
  }
  checkDuplicateLayers(body.layers ?? [], 'layers');
  const spec: TemplateSpec = {
    image: body.image,
    env: body.env ?? {},
    variables,
    resources: body.resources,
    containerPort: body.containerPort ?? DEFAULT_CONTAINER_PORT,
    readiness: readiness.value as TemplateSpec['readiness'],
    stop: {
      signal: body.stop?.signal ?? 'SIGTERM',
      timeoutMs: body.stop?.timeoutMs ?? DEFAULT_STOP_TIMEOUT_MS,
      ...(rcon ? { rcon } : {}),
      ...(body.stop?.stdin !== undefined ? { stdin: body.stop.stdin } : {}),
    },
    dataPaths: [...new Set(dataPaths)],
    layers: body.layers ?? [],
    // A crash is survived by default: restarted under the crash-loop breaker; 'never' stays available.
    restartPolicy: body.restartPolicy ?? 'on-failure',
    user,
  };
  if (body.labels && Object.keys(body.labels).length > 0) spec.labels = body.labels;
  if (technicalPaths.length > 0) spec.technicalPaths = [...new Set(technicalPaths)];
  if (body.fileDenylist && body.fileDenylist.length > 0) {
    compileDenylist(body.fileDenylist, 'body/fileDenylist');
    spec.fileDenylist = body.fileDenylist.map((p) => p.trim());
  }
  if (crash && Object.keys(crash).length > 0) spec.crashLoop = crash;
  if (body.caps?.maxInstances !== undefined) spec.caps = { maxInstances: body.caps.maxInstances };
  if (body.networkSecret) {
    if (envs.has(body.networkSecret.env) || body.env?.[body.networkSecret.env] !== undefined) {
      throw invalid('networkSecret/env', `${body.networkSecret.env} is already set by the template's env or a variable`);
    }
    spec.networkSecret = { env: body.networkSecret.env };
  }
  const security = securityFields(body.security);
  if (security) spec.security = security;
  Object.assign(spec, runtimeFields(body, paths));
  if (body.images && Object.keys(body.images).length > 0) spec.images = body.images;
  if (body.backup) {
    spec.backup = {
      ...(body.backup.onlineSave !== undefined ? { onlineSave: body.backup.onlineSave } : {}),
      ...(backupPaths ? { paths: backupPaths } : {}),
      ...(body.backup.onFailure !== undefined ? { onFailure: body.backup.onFailure } : {}),
    };
  }
  return spec;
}

/** The template's hardening opt-outs; undefined when it keeps every default (so existing specs hash the same). */
function securityFields(body: TemplateBody['security']): TemplateSpec['security'] {
  if (!body) return undefined;
  const out: NonNullable<TemplateSpec['security']> = {};
  if (body.capAdd !== undefined) {
    const problem = capAddProblem(body.capAdd);
    if (problem) throw invalid('security/capAdd', problem);
    if (body.capAdd.length > 0) out.capAdd = [...body.capAdd];
  }
  if (body.readOnlyRootfs === false) out.readOnlyRootfs = false;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** command, startup, stdin, install and configFiles (egg templates): checked, defaults filled. */
function runtimeFields(body: TemplateBody, paths: (list: readonly string[], field: string) => string[]): Partial<TemplateSpec> {
  const out: Partial<TemplateSpec> = {};
  if (body.stop?.stdin !== undefined && body.stop.rcon) throw invalid('stop/stdin', 'and stop/rcon both name the stop command: choose one');
  if (body.stop?.stdin !== undefined && body.stdin !== true)
    throw invalid('stop/stdin', 'needs stdin: true (the container is created with an open stdin)');
  if (body.command) out.command = body.command;
  if (body.startup !== undefined) {
    if (body.command)
      throw invalid('startup', "and command cannot both be set: startup is run by the image's own entrypoint, command replaces it");
    if (body.startup.trim() === '') throw invalid('startup', 'is empty');
    out.startup = body.startup;
  }
  if (body.stdin === true) out.stdin = true;
  if (body.install) out.install = { ...body.install, timeoutMs: body.install.timeoutMs ?? DEFAULT_INSTALL_TIMEOUT_MS };
  if (body.eula === true) {
    if (!body.variables?.some((v) => v.name === EULA_VARIABLE))
      throw invalid('eula', `needs a variable named ${EULA_VARIABLE} (the operator's acceptance, true or false)`);
    out.eula = true;
  }
  if (body.configFiles && body.configFiles.length > 0) {
    const filePaths = paths(
      body.configFiles.map((f) => f.path),
      'configFiles',
    );
    out.configFiles = body.configFiles.map((f, i) => {
      for (const [key, value] of Object.entries(f.find)) {
        const problem = configKeyProblem(f.parser, key, value);
        if (problem) throw invalid(`configFiles/${i}/find/${key}`, problem);
      }
      return { path: filePaths[i] as string, parser: f.parser, find: f.find };
    });
  }
  return out;
}

function checkDuplicateLayers(layers: readonly { id: string }[], field: string): void {
  const seen = new Set<string>();
  layers.forEach((l, i) => {
    if (seen.has(l.id)) throw invalid(`${field}/${i}`, `layer ${l.id} is listed twice`);
    seen.add(l.id);
  });
}

export interface NormalizedGroup {
  kind: GroupBody['kind'];
  placement: 'packed' | 'distributed';
  caps: GroupCaps;
  variants: Variant[];
  scaling: ScalingPolicy | null;
  idleTiers?: IdleTier[];
  backup?: BackupPolicy;
}

export function normalizeGroup(body: GroupBody): NormalizedGroup {
  const ids = new Set<string>();
  const variants = body.variants.map((v, i): Variant => {
    if (ids.has(v.id)) throw invalid(`variants/${i}/id`, `${v.id} is declared twice`);
    ids.add(v.id);
    checkDuplicateLayers(v.extraLayers ?? [], `variants/${i}/extraLayers`);
    return {
      id: v.id,
      template: v.template,
      extraLayers: v.extraLayers ?? [],
      ...(v.resources ? { resources: v.resources } : {}),
      env: v.env ?? {},
    };
  });
  const scaling = body.scaling == null ? null : parseScalingPolicy(body.scaling);
  // One place for the group's sleep: `scaling.idleTiers` (the older form) moves to the top level.
  let idleTiers = body.idleTiers == null ? undefined : parseIdleTiers(body.idleTiers, 'idleTiers');
  if (scaling?.idleTiers !== undefined) {
    if (idleTiers !== undefined)
      throw invalid(
        'scaling/idleTiers',
        "must not be set beside the top-level idleTiers: set the group's idle tiers once, at the top level",
      );
    idleTiers = scaling.idleTiers;
    delete scaling.idleTiers;
  }
  const capMax = body.caps?.maxInstances;
  if (scaling && capMax !== undefined && scaling.minInstances > capMax) {
    throw new AppError(
      'VALIDATION_FAILED',
      `scaling.minInstances: must not exceed caps.maxInstances (${scaling.minInstances} > ${capMax}): the minimum could never be kept`,
      {
        details: { field: 'scaling.minInstances' },
      },
    );
  }
  const backup = body.backup == null ? undefined : parseBackupPolicy(body.backup);
  return {
    kind: body.kind,
    placement: body.placement ?? 'packed',
    caps: body.caps ?? {},
    variants,
    scaling,
    ...(idleTiers ? { idleTiers } : {}),
    ...(backup ? { backup } : {}),
  };
}
