// Instance records, pure: resolves a group variant over its template into the
// stored instance (container config, settings, generated secrets) and builds
// the agent's create body from it. Secrets live only in secretSettings.

import { createHash, randomBytes } from 'node:crypto';
import type {
  ContainerConfig,
  ContainerUserSpec,
  Group,
  Instance,
  JsonObject,
  TemplateSpec,
  TemplateVersion,
  Variant,
} from '../../domain/index.js';
import { planConfigEdits } from '../../eggs/config-files.js';
import { PUBLISHED_IP_REFERENCE, builtinEnv, renderStartup, wingsEnv } from '../../eggs/startup.js';
import { containerUserString, redactSecrets } from '../../lifecycle/settings.js';
import type { CreateInstanceRequest as AgentCreateBody } from '../drivers/host-driver.js';
import { normalizeValue, valueProblem } from '../../contracts/catalog-rules.js';
import { AppError } from '../../shared/errors.js';

/** The per-instance bridge secret (env name and secretSettings key). */
export const INSTANCE_TOKEN_ENV = 'ENDERCLOUD_INSTANCE_TOKEN';
/** A secret setting whose new value waits for the next replacement. */
export const PENDING_SECRET_PREFIX = 'pending:';

export function hashToken(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

export interface InstanceDraft {
  id: string;
  name: string;
  group: Group;
  variant: Variant;
  template: TemplateVersion;
  hostId: string;
  desiredState: Instance['desiredState'];
  now: number;
  /** Generates a secret value; injected for tests. */
  generateSecret?: () => string;
  /** The container user chosen at creation (the template's when absent). */
  user?: ContainerUserSpec;
  /** Values given at creation (creation step 3, docs/lifecycle.md "Creating an instance"), already checked by creationValues. */
  values?: CreationValues;
  /** The image chosen at creation from the template's `images` (chosenImage); default the template's image. */
  image?: string;
}

/** Template variable values given at creation: plain settings, and secrets (never shown again). */
export interface CreationValues {
  settings: JsonObject;
  secrets: Record<string, string>;
}

/**
 * Checks the values given at creation against the template's variables before
 * anything is written: every key must be a variable, a secret must be given
 * under `secrets` and a plain value under `settings`, and each value must pass
 * its variable's rules. The refusal names the variable and the rule.
 */
export function creationValues(
  spec: TemplateSpec,
  settings: Record<string, unknown> = {},
  secrets: Record<string, unknown> = {},
): CreationValues {
  const refuse = (field: string, problem: string) => new AppError('VALIDATION_FAILED', `body/${field} ${problem}`, { details: { field } });
  const out: CreationValues = { settings: {}, secrets: {} };
  for (const [where, given] of [
    ['settings', settings],
    ['secrets', secrets],
  ] as const) {
    for (const [name, givenValue] of Object.entries(given)) {
      const variable = spec.variables.find((v) => v.name === name);
      if (!variable)
        throw refuse(
          `${where}/${name}`,
          `is not a variable of this template (it has ${spec.variables.map((v) => v.name).join(', ') || 'none'})`,
        );
      if (where === 'settings' && variable.secret)
        throw refuse(`settings/${name}`, 'is a secret variable: give it under secrets (it is never shown again)');
      if (where === 'secrets' && !variable.secret) throw refuse(`secrets/${name}`, 'is not a secret variable: give it under settings');
      // An egg boolean is stored in the egg's own spelling (`true` → `1` for an egg that tests "1").
      const value = normalizeValue(variable, givenValue);
      if (where === 'secrets' && typeof value !== 'string') throw refuse(`secrets/${name}`, 'must be a string');
      const problem = valueProblem(variable.type, value, variable.validation ?? {});
      if (problem) throw refuse(`${where}/${name}`, problem);
      if (where === 'settings') out.settings[name] = value as JsonObject[string];
      else out.secrets[name] = value as string;
    }
  }
  return out;
}

export const defaultSecretGenerator = (): string => randomBytes(18).toString('base64url');

export function memoryFor(variant: Variant, template: TemplateSpec): number {
  return variant.resources?.memoryMb ?? template.resources.memoryMb;
}

/** Secrets a template needs a value for at creation: required ones and the RCON password. */
function secretsToGenerate(spec: TemplateSpec): string[] {
  return spec.variables.filter((v) => v.secret && (v.required || spec.stop.rcon?.passwordVariable === v.name)).map((v) => v.name);
}

export function buildInstance(d: InstanceDraft): Omit<Instance, 'version'> {
  const spec = d.template.spec;
  const settings: JsonObject = {};
  const env: Record<string, string> = { ...spec.env };
  for (const v of spec.variables) {
    if (v.secret) continue;
    const value = d.values?.settings[v.name] ?? v.default;
    if (value === undefined) continue;
    settings[v.name] = value;
    env[v.env ?? v.name] = String(value);
  }
  Object.assign(env, d.variant.env);
  const secretSettings: Record<string, string> = {};
  const generate = d.generateSecret ?? defaultSecretGenerator;
  for (const name of secretsToGenerate(spec)) secretSettings[name] = generate();
  Object.assign(secretSettings, d.values?.secrets);
  const bridgeToken = generate();
  secretSettings[INSTANCE_TOKEN_ENV] = bridgeToken;
  const containerConfig: ContainerConfig = {
    image: d.image ?? spec.image,
    labels: spec.labels ?? {},
    env,
    resources: d.variant.resources ?? spec.resources,
    containerPort: spec.containerPort,
    layers: [...spec.layers, ...d.variant.extraLayers],
  };
  return {
    id: d.id,
    name: d.name,
    groupId: d.group.id,
    variantId: d.variant.id,
    hostId: d.hostId,
    sessionId: null,
    state: 'installing',
    stateReason: 'created',
    stateChangedAt: d.now,
    desiredState: d.desiredState,
    observed: null,
    endpoint: null,
    hostPort: null,
    memoryMb: memoryFor(d.variant, spec),
    memoryReserved: true,
    settings,
    secretSettings,
    pendingChanges: [],
    containerConfig,
    containerConfigPending: false,
    revision: 1,
    user: d.user ?? spec.user,
    crashLoop: { exits: [], windowMs: 600_000, tripped: false, trippedAt: null },
    maintenance: null,
    activeAction: null,
    players: null,
    deletion: null,
    bridgeTokenHash: hashToken(bridgeToken),
    fleet: null,
    createdAt: d.now,
    updatedAt: d.now,
  };
}

/**
 * The agent's PUT /instances/:id body. Secret values join the env only here,
 * at dispatch, so they never sit in a stored command payload.
 */
export function agentCreateBody(
  instance: Instance,
  template: TemplateSpec | undefined,
  opts: {
    endercloudUser?: { uid: number; gid: number };
    config?: ContainerConfig;
    pull?: 'missing' | 'always';
    networkSecret?: string;
  } = {},
): AgentCreateBody {
  const c = opts.config ?? instance.containerConfig;
  const env = { ...c.env };
  if (template?.networkSecret && opts.networkSecret !== undefined) env[template.networkSecret.env] = opts.networkSecret;
  for (const [name, value] of Object.entries(instance.secretSettings)) {
    if (name.startsWith(PENDING_SECRET_PREFIX)) continue;
    const variable = template?.variables.find((v) => v.name === name);
    env[variable?.env ?? name] = value;
  }
  const body: AgentCreateBody = {
    groupId: instance.groupId,
    variantId: instance.variantId,
    image: c.image,
    layers: c.layers.map((l) => ({ id: l.id, checksum: l.checksum })),
    resources:
      c.resources.cpus === undefined ? { memoryMb: c.resources.memoryMb } : { memoryMb: c.resources.memoryMb, cpus: c.resources.cpus },
    env,
    containerPort: c.containerPort,
  };
  if (instance.sessionId) body.sessionId = instance.sessionId;
  const user =
    instance.user.mode === 'endercloud' && opts.endercloudUser
      ? `${opts.endercloudUser.uid}:${opts.endercloudUser.gid}`
      : containerUserString(instance.user.mode === 'endercloud' ? { mode: 'endercloud' } : instance.user);
  if (user !== undefined) body.user = user;
  if (Object.keys(c.labels).length > 0) body.labels = { ...c.labels };
  if (template) {
    body.stopSignal = template.stop.signal;
    body.stopTimeoutSeconds = Math.max(1, Math.ceil(template.stop.timeoutMs / 1000));
  }
  if (opts.pull) body.pull = opts.pull;
  if (template?.command) {
    // Templates with a command (eggs) get Wings' SERVER_* variables, and the command is filled in from the final env.
    body.env = builtinEnv(env, c.resources.memoryMb, c.containerPort);
    body.command = renderStartup(template.command, body.env);
  }
  if (template?.startup !== undefined) {
    // Wings' runtime: the image's entrypoint runs STARTUP in /home/container; the agent adds SERVER_IP and TZ.
    body.layout = 'wings';
    body.env = wingsEnv(env, {
      startup: template.startup,
      memoryMb: c.resources.memoryMb,
      containerPort: c.containerPort,
      instanceId: instance.id,
      location: instance.hostId ?? '',
    });
  }
  if (template?.stdin) body.openStdin = true;
  if (template?.security) body.security = { ...template.security };
  if (template?.configFiles && template.configFiles.length > 0) {
    // Under Wings' layout the agent fills in the address it publishes the game port on.
    const ip = body.layout === 'wings' ? PUBLISHED_IP_REFERENCE : '0.0.0.0';
    const ctxEnv =
      body.layout === 'wings'
        ? { SERVER_IP: ip, ...(body.env ?? env) }
        : builtinEnv(body.env ?? env, c.resources.memoryMb, c.containerPort);
    body.configFiles = planConfigEdits(template.configFiles, { port: c.containerPort, ip, memoryMb: c.resources.memoryMb, env: ctxEnv });
  }
  return body;
}

/** The agent's POST /instances/:id/replace body: the create body without layers (a replace keeps the runtime directory). */
export function agentReplaceBody(...args: Parameters<typeof agentCreateBody>): Omit<AgentCreateBody, 'layers' | 'start'> {
  const { layers: _layers, start: _start, ...body } = agentCreateBody(...args);
  return body;
}

/** Every secret name of an instance: its secret settings and the template's secret variables. */
export function secretNames(instance: Pick<Instance, 'secretSettings'>, template: TemplateSpec | undefined): string[] {
  const names = new Set(
    Object.keys(instance.secretSettings).map((k) => (k.startsWith(PENDING_SECRET_PREFIX) ? k.slice(PENDING_SECRET_PREFIX.length) : k)),
  );
  for (const v of template?.variables ?? []) {
    if (!v.secret) continue;
    names.add(v.name);
    if (v.env) names.add(v.env);
  }
  names.add(INSTANCE_TOKEN_ENV);
  return [...names];
}

/** The immutable, redacted configuration a revision records. */
export function revisionConfig(instance: Instance, template: TemplateSpec | undefined): JsonObject {
  const config = {
    image: instance.containerConfig.image,
    labels: instance.containerConfig.labels,
    env: instance.containerConfig.env,
    resources: instance.containerConfig.resources,
    containerPort: instance.containerConfig.containerPort,
    layers: instance.containerConfig.layers,
    settings: instance.settings,
    secretSettings: Object.keys(instance.secretSettings)
      .filter((k) => !k.startsWith(PENDING_SECRET_PREFIX))
      .sort(),
    user: instance.user,
  };
  return redactSecrets(JSON.parse(JSON.stringify(config)) as JsonObject, secretNames(instance, template));
}
