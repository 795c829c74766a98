// The seam between connection handling and routing policy. The Router asks a
// BackendResolver what to do with each connection; the static resolver reads
// the TOML file, and the registry-backed resolver (with an orchestrator) will
// implement the same interface over the shapes declared below.

export type Intent = 'status' | 'login' | 'transfer';

export interface Player {
  name: string;
  uuid?: string;
}

export interface RouteRequest {
  /** The cleaned address (see cleanServerAddress). */
  serverAddress: string;
  intent: Intent;
  player?: Player;
  protocolVersion: number;
  clientAddress: string;
}

export interface BackendTarget {
  /** The `[servers]` name (or registry name) the target came from. */
  name: string;
  host: string;
  port: number;
}

/** States the router answers status pings for itself. */
export type LocalStatusState = 'Paused' | 'Stopped' | 'Starting' | 'Unreachable' | 'NoBackend';

export type RouteDecision =
  /** Dial the candidates in order (dial timeout each) and pipe to the first that answers. */
  | { kind: 'connect'; candidates: BackendTarget[] }
  /** Answer a status ping locally with this state's MOTD (logins get a disconnect). */
  | { kind: 'status'; state: LocalStatusState }
  /** Resume the instance, hold the login until it is ready (bounded), then connect. */
  | { kind: 'wake-then-connect'; instanceId: string; target: BackendTarget }
  /** Ask for a start and tell the player when to come back. */
  | { kind: 'start-and-disconnect'; instanceId?: string; message: string }
  | { kind: 'refuse'; message: string };

export interface BackendResolver {
  resolve(request: RouteRequest): RouteDecision | Promise<RouteDecision>;
}

/** Wakes and starts instances (with an orchestrator: POST /instances/:id/resume and /start). */
export interface Waker {
  /** Resolves when the instance is ready for players; rejects on failure or abort. */
  wake(instanceId: string, signal: AbortSignal): Promise<void>;
  /** Requests a start without waiting for readiness. */
  start(instanceId: string): Promise<void>;
}

export interface SessionInfo {
  player: Player;
  clientAddress: string;
  backend?: BackendTarget;
  instanceId?: string;
}

/** Reports sessions so the orchestrator knows when a world is empty (with an orchestrator). */
export interface SessionReporter {
  loginAccepted(session: SessionInfo): void;
  loginDenied(session: SessionInfo, reason: string): void;
  disconnected(session: SessionInfo, stats: { durationMs: number; bytesIn: number; bytesOut: number }): void;
}

export const noopSessionReporter: SessionReporter = {
  loginAccepted: () => undefined,
  loginDenied: () => undefined,
  disconnected: () => undefined,
};
