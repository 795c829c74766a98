// API views of stored records: ISO timestamps, no secrets, no hashes.

import type { JsonObject } from '../domain/common.js';
import type {
  ApiToken,
  AuditEvent,
  Command,
  ConfigRevision,
  Group,
  Host,
  Instance,
  InstanceHistoryEntry,
  TemplateLayer,
  TemplateVersion,
} from '../domain/index.js';
import { crashLoopView, fromStored, type CrashLoopPolicy } from '../lifecycle/crash-loop.js';
import { NOTHING_HIDDEN, withoutHidden, type HiddenValues } from '../eggs/variable-access.js';
import { PENDING_SECRET_PREFIX } from './services/instance-config.js';

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function hostView(h: Host, instanceCount: number) {
  return {
    id: h.id,
    status: h.status,
    statusReason: h.statusReason,
    statusChangedAt: iso(h.statusChangedAt),
    controlUrl: h.controlUrl,
    gameAddress: h.gameAddress,
    resources: h.resources,
    memoryReservedMb: h.memoryReservedMb,
    portRange: h.portRange,
    version: h.version,
    heartbeatIntervalMs: h.heartbeatIntervalMs,
    maintenance: h.maintenance ? { enabled: h.maintenance.enabled, message: h.maintenance.message, since: iso(h.maintenance.since) } : null,
    firstSeenAt: iso(h.firstSeenAt),
    lastHeartbeatAt: iso(h.lastHeartbeatAt),
    instances: { total: instanceCount },
    credential: {
      mode: h.credentialGeneration === undefined ? 'shared' : h.credentialRevokedAt !== undefined ? 'revoked' : 'enrolled',
      generation: h.credentialGeneration ?? null,
      enrolledAt: h.enrolledAt !== undefined ? iso(h.enrolledAt) : null,
      revokedAt: h.credentialRevokedAt !== undefined ? iso(h.credentialRevokedAt) : null,
    },
  };
}

export function layerView(l: TemplateLayer) {
  return { id: l.id, checksum: l.checksum, sizeBytes: l.sizeBytes, createdAt: iso(l.createdAt) };
}

export function templateView(t: TemplateVersion) {
  return { name: t.name, version: t.version, specHash: t.specHash, createdAt: iso(t.createdAt), ...t.spec };
}

export function groupView(g: Group) {
  return {
    id: g.id,
    kind: g.kind,
    placement: g.placement,
    caps: g.caps,
    variants: g.variants,
    scaling: g.scaling,
    idleTiers: g.idleTiers ?? null,
    ...(g.backup ? { backup: g.backup } : {}),
    createdAt: iso(g.createdAt),
    updatedAt: iso(g.updatedAt),
  };
}

/**
 * Secret settings are never returned: only which ones are set. Hidden variables
 * (`hidden`: what the reader may not see, see hiddenFrom) are left out of the
 * settings and their pending changes lose the value. `actions`, when given: the
 * power actions the reader may run now (routes/route-helpers.ts actionsForCaller).
 */
export function instanceView(
  i: Instance,
  crash?: { policy: CrashLoopPolicy; now: number },
  hidden: HiddenValues = NOTHING_HIDDEN,
  actions?: readonly string[],
) {
  const loop = crash
    ? crashLoopView(fromStored(i.crashLoop), crash.now, crash.policy)
    : { count: i.crashLoop.exits.length, windowMs: i.crashLoop.windowMs, tripped: i.crashLoop.tripped, trippedAt: i.crashLoop.trippedAt };
  return {
    id: i.id,
    name: i.name,
    groupId: i.groupId,
    variantId: i.variantId,
    hostId: i.hostId,
    sessionId: i.sessionId,
    state: i.state,
    stateReason: i.stateReason,
    desiredState: i.desiredState,
    observed: i.observed,
    endpoint: i.endpoint,
    memoryMb: i.memoryMb,
    memoryReserved: i.memoryReserved,
    observedState: i.observed?.container ?? null,
    players: i.players ? { online: i.players.online, max: i.players.max, at: iso(i.players.at) } : null,
    pendingChanges: i.pendingChanges.map((c) => {
      const hide = c.key.startsWith('settings.') && hidden.settings.has(c.key.slice('settings.'.length));
      return {
        key: c.key,
        ...(hide ? { hidden: true } : { value: c.value }),
        mode: c.mode,
        requestedAt: iso(c.requestedAt),
        ...(c.secret ? { secret: true } : {}),
      };
    }),
    containerConfigPending: i.containerConfigPending,
    crashLoop: { ...loop, trippedAt: iso(loop.trippedAt) },
    maintenance: i.maintenance ? { enabled: i.maintenance.enabled, message: i.maintenance.message, since: iso(i.maintenance.since) } : null,
    activeAction: i.activeAction
      ? { kind: i.activeAction.kind, commandId: i.activeAction.commandId, startedAt: iso(i.activeAction.startedAt) }
      : null,
    ...(actions ? { actions: [...actions] } : {}),
    deletion: i.deletion,
    image: i.containerConfig.image,
    labels: i.containerConfig.labels,
    user: i.user,
    revision: i.revision,
    settings: withoutHidden(i.settings, hidden.settings),
    ...(hidden.settings.size > 0 ? { hiddenSettings: [...hidden.settings].filter((k) => Object.hasOwn(i.settings, k)).sort() } : {}),
    secretSettings: Object.keys(i.secretSettings).filter((k) => !k.startsWith(PENDING_SECRET_PREFIX)),
    createdAt: iso(i.createdAt),
    updatedAt: iso(i.updatedAt),
    stateChangedAt: iso(i.stateChangedAt),
  };
}

export function commandView(c: Command) {
  return {
    id: c.id,
    kind: c.kind,
    instanceId: c.instanceId,
    hostId: c.hostId,
    status: c.status,
    attempts: c.attempts,
    maxAttempts: c.maxAttempts,
    nextAttemptAt: iso(c.nextAttemptAt),
    lastError: c.lastError,
    result: c.result,
    requestId: c.requestId,
    createdAt: iso(c.createdAt),
    updatedAt: iso(c.updatedAt),
    completedAt: iso(c.completedAt),
  };
}

export function tokenView(t: ApiToken) {
  return {
    id: t.id,
    name: t.name,
    scopes: t.scopes,
    createdAt: iso(t.createdAt),
    lastUsedAt: iso(t.lastUsedAt),
    revokedAt: iso(t.revokedAt),
  };
}

export function historyView(h: InstanceHistoryEntry) {
  return { at: iso(h.at), from: h.from, to: h.to, reason: h.reason, actor: h.actor, commandId: h.commandId, details: h.details };
}

/** A revision; hidden variables leave its settings and env (`hidden`: what the reader may not see). */
export function revisionView(r: ConfigRevision, hidden: HiddenValues = NOTHING_HIDDEN) {
  let config = r.config;
  if (hidden.settings.size > 0) {
    const { settings, env } = config as { settings?: unknown; env?: unknown };
    const strip = (v: unknown, names: ReadonlySet<string>) =>
      v && typeof v === 'object' && !Array.isArray(v) ? withoutHidden(v as JsonObject, names) : v;
    config = {
      ...config,
      ...(settings !== undefined ? { settings: strip(settings, hidden.settings) } : {}),
      ...(env !== undefined ? { env: strip(env, hidden.env) } : {}),
    } as JsonObject;
  }
  return { revision: r.revision, createdAt: iso(r.createdAt), actor: r.actor, reason: r.reason, config };
}

export function auditView(a: AuditEvent) {
  return {
    id: a.id,
    at: iso(a.at),
    actor: a.actor,
    action: a.action,
    targetKind: a.targetKind,
    targetId: a.targetId,
    params: a.params,
    result: a.result,
    errorCode: a.errorCode,
    requestId: a.requestId,
  };
}
