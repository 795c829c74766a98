// The seam between connection handling and routing policy. A BackendResolver
// turns each connection into a RoutePlan (pure given the registry snapshot,
// config and clock); the connection executes it, and one WakeCoordinator owns
// every wake, start and group join plus the wait for Running.

import type { WakeAction } from '../protocol/registry-contract.js';

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
  /** The `[servers]` name (or registry name) the target came from; the per-target metrics label. */
  name: string;
  host: string;
  port: number;
  /** Set for registry targets (session reports, transfer-back). */
  readonly instanceId?: string;
}

/** States the router answers status pings for itself. */
export type LocalStatusState = 'Paused' | 'Stopped' | 'Starting' | 'Unreachable' | 'NoBackend';

/** Why a login is refused; also the `reason` of the outcome log line. */
export type RefuseReason = 'no_backend' | 'unreachable' | 'full' | 'maintenance' | 'starting' | 'wake_refused' | 'capacity';

export type RoutePlan =
  /** Dial the candidates in order (dial timeout each) and pipe to the first that answers. */
  | { kind: 'route'; candidates: BackendTarget[] }
  /** Ask for `action` (resume/start), hold the login until the instance is Running, then route. */
  | { kind: 'wake'; instanceId: string; action: WakeAction; target: BackendTarget; fallback?: BackendTarget[] }
  /** The instance is already starting: hold until Running without asking again. */
  | { kind: 'hold'; instanceId: string; target: BackendTarget; fallback?: BackendTarget[] }
  /** Ask the orchestrator for an instance of the group, hold until it is Running, then route. */
  | { kind: 'join-group'; groupId: string; name: string; fallback?: BackendTarget[] }
  /** The world cannot be ready within the hold: request `action` (unless null), route to the fallback now, transfer back once online. */
  | { kind: 'fallback'; instanceId: string; action: WakeAction | null; candidates: BackendTarget[] }
  /** Disconnect with `message` (after requesting a start when `start` is set). */
  | { kind: 'refuse'; reason: RefuseReason; message: string; start?: { instanceId: string; action: WakeAction | null } }
  /** Status only: answer locally with this state's MOTD. */
  | { kind: 'status'; state: LocalStatusState };

export interface BackendResolver {
  resolve(request: RouteRequest): RoutePlan | Promise<RoutePlan>;
}

/** A wake, start or join the orchestrator refused (policy, capacity) or could not be asked (unreachable). */
export class WakeFailed extends Error {
  constructor(
    readonly reason: 'refused' | 'capacity' | 'unreachable' | 'timeout',
    message: string,
    /** The orchestrator's error code and its player-facing reason ("survival is full (4 of 4 worlds)"), when it sent them. */
    readonly upstream: { code?: string; playerMessage?: string } = {},
  ) {
    super(message);
    this.name = 'WakeFailed';
  }
}

/** The one owner of wake/start/join requests and of waiting for Running (with an orchestrator). */
export interface WakeCoordinator {
  /** Requests `action` (null: only wait), shared per instance; resolves once Running; rejects WakeFailed or on abort. */
  wake(instanceId: string, action: WakeAction | null, signal: AbortSignal): Promise<void>;
  /** Requests a start (or resume) without waiting; rejects WakeFailed. */
  request(instanceId: string, action: WakeAction): Promise<void>;
  /** Asks for an instance of the group and waits for it as after a wake; resolves the target to dial. */
  /**
   * `onInstance` hears the orchestrator's pick at once, before the wait for Running (a hold that ends
   * first still knows which world to return the player to); `paused` is its target when the pick is
   * a Paused world being woken (its socket accepts into the backlog: the router may dial it early).
   */
  joinGroup(
    groupId: string,
    name: string,
    player: Player,
    signal: AbortSignal,
    onInstance?: (instanceId: string, paused?: BackendTarget) => void,
  ): Promise<BackendTarget>;
  /** The registry's estimate of ms until the instance is Running (null: unknown). */
  expectedStartMs(instanceId: string): number | null;
  /** While `signal` is not aborted, watches the instance and transfers the player to it once Running. */
  returnWhenOnline(player: Player, instanceId: string, signal: AbortSignal): void;
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
