// What the router answers by itself: status JSON and legacy answers per
// local state, and the login-disconnect text for states a login cannot use.

import type { LegacyStatus } from '../protocol/legacy-ping.js';
import type { ServerStatus } from '../protocol/status-client.js';
import type { MessagesConfig, StatusConfig } from './config.js';
import type { LocalStatusState, RoutePlan } from './resolver.js';

export function motdFor(state: LocalStatusState, status: StatusConfig): string {
  switch (state) {
    case 'Paused':
      return status.motd.asleep;
    case 'Starting':
      return status.motd.starting;
    case 'Stopped':
      return status.motd.stopped;
    case 'Unreachable':
      return status.motd.unreachable;
    case 'NoBackend':
      return status.motd.noBackend;
  }
}

/** The status JSON for a local answer; the client's protocol is echoed so it shows no version warning. */
export function localStatusJson(state: LocalStatusState, protocolVersion: number, status: StatusConfig): ServerStatus {
  return {
    version: { name: status.versionName, protocol: protocolVersion },
    players: { max: status.maxPlayers, online: 0, sample: [] },
    description: { text: motdFor(state, status) },
  };
}

export function localLegacyStatus(state: LocalStatusState, protocolVersion: number, status: StatusConfig): LegacyStatus {
  return { protocolVersion, versionName: status.versionName, motd: motdFor(state, status), online: 0, max: status.maxPlayers };
}

/** Flattens a JSON text component (string, {text, extra}, or array) to plain text. */
export function plainText(component: unknown, depth = 0): string {
  if (depth > 8 || component === null || component === undefined) return '';
  if (typeof component === 'string') return component;
  if (Array.isArray(component)) return component.map((c) => plainText(c, depth + 1)).join('');
  if (typeof component === 'object') {
    const c = component as { text?: unknown; extra?: unknown };
    return plainText(c.text, depth + 1) + plainText(c.extra, depth + 1);
  }
  return String(component);
}

/** Converts a backend's modern status answer into the legacy form. */
export function legacyFromStatus(s: ServerStatus, fallbackProtocol: number): LegacyStatus {
  return {
    protocolVersion: s.version?.protocol ?? fallbackProtocol,
    versionName: s.version?.name ?? '',
    motd: plainText(s.description),
    online: s.players?.online ?? 0,
    max: s.players?.max ?? 0,
  };
}

/** Disconnect text for a login that resolved to a state it cannot join. */
export function loginMessageFor(state: LocalStatusState, messages: MessagesConfig): string {
  return state === 'NoBackend' ? messages.noBackend : messages.unreachable;
}

/**
 * Status never wakes or starts anything: a plan a status request resolved to becomes a local
 * answer (`route` only reaches here when every candidate failed to answer).
 */
export function localStateForPlan(plan: RoutePlan): LocalStatusState {
  switch (plan.kind) {
    case 'status':
      return plan.state;
    case 'wake':
      return plan.action === 'resume' ? 'Paused' : 'Stopped';
    case 'hold':
      return 'Starting';
    case 'join-group':
      return 'Paused';
    case 'fallback':
      return plan.action === null ? 'Starting' : 'Stopped';
    case 'refuse':
      if (plan.start) return plan.start.action === 'start' ? 'Stopped' : 'Starting';
      return plan.reason === 'unreachable' ? 'Unreachable' : 'NoBackend';
    case 'route':
      return 'Unreachable';
  }
}
