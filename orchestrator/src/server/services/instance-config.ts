// Instance records, pure: resolves a group variant over its template into the
// stored instance (container config, settings, generated secrets) and builds
// the agent's create body from it. Secrets live only in secretSettings.

import { randomBytes } from 'node:crypto';
import type { ContainerConfig, Group, Instance, JsonObject, TemplateSpec, TemplateVersion, Variant } from '../../domain/index.js';
import type { AgentCreateBody } from '../agent-client.js';

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
    if (v.secret || v.default === undefined) continue;
    settings[v.name] = v.default;
    env[v.env ?? v.name] = String(v.default);
  }
  Object.assign(env, d.variant.env);
  const secretSettings: Record<string, string> = {};
  for (const name of secretsToGenerate(spec)) secretSettings[name] = (d.generateSecret ?? defaultSecretGenerator)();
  const containerConfig: ContainerConfig = {
    image: spec.image,
    labels: spec.labels ?? {},
    env,
    resources: d.variant.resources ?? spec.resources,
    containerPort: spec.containerPort,
    layers: [...spec.layers, ...d.variant.extraLayers],
  };
  return {
    id: d.id, name: d.name, groupId: d.group.id, variantId: d.variant.id, hostId: d.hostId, sessionId: null,
    state: 'installing', stateReason: 'created', stateChangedAt: d.now, desiredState: d.desiredState,
    observed: null, endpoint: null, hostPort: null,
    memoryMb: memoryFor(d.variant, spec),
    settings, secretSettings, pendingChanges: [], containerConfig, containerConfigPending: false, revision: 1,
    user: spec.user,
    crashLoop: { exits: [], windowMs: 600_000, tripped: false, trippedAt: null },
    maintenance: null, activeAction: null, players: null, deletion: null, bridgeTokenHash: null,
    createdAt: d.now, updatedAt: d.now,
  };
}

/**
 * The agent's PUT /instances/:id body. Secret values join the env only here,
 * at dispatch, so they never sit in a stored command payload.
 */
export function agentCreateBody(instance: Instance, template: TemplateSpec | undefined): AgentCreateBody {
  const c = instance.containerConfig;
  const env = { ...c.env };
  for (const [name, value] of Object.entries(instance.secretSettings)) {
    const variable = template?.variables.find((v) => v.name === name);
    env[variable?.env ?? name] = value;
  }
  const body: AgentCreateBody = {
    groupId: instance.groupId,
    variantId: instance.variantId,
    image: c.image,
    layers: c.layers.map((l) => ({ id: l.id, checksum: l.checksum })),
    resources: c.resources.cpus === undefined ? { memoryMb: c.resources.memoryMb } : { memoryMb: c.resources.memoryMb, cpus: c.resources.cpus },
    env,
    containerPort: c.containerPort,
  };
  if (instance.sessionId) body.sessionId = instance.sessionId;
  return body;
}
