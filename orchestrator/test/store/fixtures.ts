// Builders for store contract tests: valid domain records with overridable fields.

import { createHash } from 'node:crypto';
import type { Group, HostHeartbeat, Instance, TemplateSpec, TemplateVersion } from '../../src/domain/index.js';
import { canonicalJson } from '../../src/store/json.js';

let counter = 0;
/** Unique within the process: tests never depend on each other's rows. */
export function uid(prefix: string): string {
  counter += 1;
  return `${prefix}-${counter}-${Math.random().toString(36).slice(2, 7)}`;
}

export const T0 = 1_700_000_000_000;

export function heartbeat(id: string, overrides: Partial<HostHeartbeat> = {}): HostHeartbeat {
  return {
    id,
    controlUrl: `http://127.0.0.1:7000/${id}`,
    gameAddress: '127.0.0.1',
    resources: { memoryMb: 8192, cpus: 4, diskBytes: 100 * 1024 ** 3 },
    version: '0.1.0',
    portRange: { first: 30000, last: 30099 },
    heartbeatIntervalMs: 1000,
    bootId: 'boot-1',
    ...overrides,
  };
}

export function templateSpec(overrides: Partial<TemplateSpec> = {}): TemplateSpec {
  return {
    image: 'endercloud/test-server:1',
    env: { EULA: 'TRUE', 'WITH.UNICODE': 'ünïcødé ✓' },
    variables: [
      { name: 'MOTD', type: 'string', default: 'hello', validation: { maxLength: 60 }, apply: 'restart_required' },
      { name: 'RCON_PASSWORD', type: 'string', secret: true, required: true },
      { name: 'DIFFICULTY', type: 'enum', validation: { values: ['easy', 'hard'] }, default: 'easy' },
      { name: 'VIEW', type: 'integer', validation: { min: 2, max: 32 }, default: 10 },
    ],
    resources: { memoryMb: 1024, cpus: 1.5 },
    containerPort: 25565,
    readiness: { kind: 'minecraft', startupTimeoutMs: 120_000, intervalMs: 2000 },
    stop: { signal: 'SIGTERM', rcon: { port: 25575, passwordVariable: 'RCON_PASSWORD' }, timeoutMs: 60_000 },
    dataPaths: ['world', 'playerdata'],
    layers: [
      { id: 'base', checksum: 'a'.repeat(64) },
      { id: 'plugins', checksum: 'b'.repeat(64) },
    ],
    restartPolicy: 'on-failure',
    user: { mode: 'endercloud' },
    ...overrides,
  };
}

export function templateVersion(name: string, version: string, spec: TemplateSpec = templateSpec()): TemplateVersion {
  return { name, version, spec, specHash: createHash('sha256').update(canonicalJson(spec)).digest('hex'), createdAt: T0 };
}

export function group(id: string, overrides: Partial<Group> = {}): Group {
  return {
    id,
    kind: 'persistent',
    placement: 'packed',
    caps: { maxInstances: 10 },
    variants: [
      {
        id: 'default',
        template: { name: 'paper', version: '1.0.0' },
        extraLayers: [{ id: 'extra', checksum: 'c'.repeat(64) }],
        env: { A: '1' },
      },
      { id: 'big', template: { name: 'paper', version: '1.0.0' }, extraLayers: [], resources: { memoryMb: 4096 }, env: {} },
    ],
    scaling: null,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}

export function instance(id: string, overrides: Partial<Omit<Instance, 'version'>> = {}): Omit<Instance, 'version'> {
  return {
    id,
    name: `name-${id}`,
    groupId: 'g1',
    variantId: 'default',
    hostId: null,
    sessionId: null,
    state: 'draft',
    stateReason: null,
    stateChangedAt: T0,
    desiredState: 'running',
    observed: null,
    endpoint: null,
    hostPort: null,
    memoryMb: 1024,
    settings: { MOTD: 'hi', VIEW: 10, nested: { list: [1, 'two', null, true] } },
    secretSettings: { RCON_PASSWORD: 's3cr3t' },
    pendingChanges: [],
    containerConfig: {
      image: 'endercloud/test-server:1',
      labels: { team: 'red' },
      env: { EULA: 'TRUE' },
      resources: { memoryMb: 1024 },
      containerPort: 25565,
      layers: [{ id: 'base', checksum: 'a'.repeat(64) }],
    },
    containerConfigPending: false,
    revision: 1,
    user: { mode: 'custom', uid: 1000, gid: 1000 },
    crashLoop: { exits: [], windowMs: 600_000, tripped: false, trippedAt: null },
    maintenance: null,
    activeAction: null,
    players: null,
    deletion: null,
    bridgeTokenHash: null,
    memoryReserved: true,
    fleet: null,
    createdAt: T0,
    updatedAt: T0,
    ...overrides,
  };
}
