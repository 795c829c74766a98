// The router's calls to the orchestrator (wake, transfer claim, session
// reports) over fetch with the router token and a timeout. Errors are AppError:
// the orchestrator's own error code and message for 4xx, UPSTREAM_FAILED
// (retryable) for network failures and 5xx.

import { AppError, ERROR_CATALOGUE, type ErrorCode } from '../shared/errors.js';
import {
  groupJoinPath,
  instanceActionPath,
  parseGroupJoinAnswer,
  ROUTER_TRANSFERS_PATH,
  parseTransferClaim,
  parseWakeAccepted,
  ROUTER_SESSIONS_PATH,
  TRANSFER_CLAIM_PATH,
  type GroupJoinAnswer,
  type RouterSessionsBatch,
  type TransferClaim,
  type WakeAccepted,
  type WakeAction,
} from '../protocol/registry-contract.js';
import type { Player } from './resolver.js';
import type { FetchLike } from './registry-client.js';

export interface OrchestratorApiOptions {
  baseUrl: string;
  token: string | undefined;
  fetch?: FetchLike;
  /** Per request; a wake or claim sits on a player's login path. */
  timeoutMs?: number;
  /**
   * A group join's own bound (default 15 s): the player may be parked on the
   * fallback while it is in flight, and its answer still names the world
   * they are sent back to, so a slow orchestrator must not lose it.
   */
  joinTimeoutMs?: number;
}

/** The calls the router makes besides the registry stream (an interface so tests can swap the transport). */
export interface RouterApi {
  requestWake(instanceId: string, action: WakeAction): Promise<WakeAccepted>;
  /** A join to a group: the orchestrator picks the instance (and wakes, starts or spawns it). */
  joinGroup(groupId: string, player: Player): Promise<GroupJoinAnswer>;
  /** Moves a connected player (on the fallback server) to an instance that is now online. */
  requestTransfer(player: Player, instanceId: string): Promise<void>;
  /** The player's pending transfer, consumed; undefined when there is none (404). */
  claimTransfer(player: Player): Promise<TransferClaim | undefined>;
  postSessions(batch: RouterSessionsBatch): Promise<void>;
}

const playerBody = (player: Player): { player: string; uuid?: string } =>
  player.uuid ? { player: player.name, uuid: player.uuid } : { player: player.name };

export class OrchestratorApi implements RouterApi {
  private readonly fetch: FetchLike;
  private readonly timeoutMs: number;
  private readonly joinTimeoutMs: number;

  constructor(private readonly options: OrchestratorApiOptions) {
    this.fetch = options.fetch ?? fetch;
    this.timeoutMs = options.timeoutMs ?? 3000;
    this.joinTimeoutMs = options.joinTimeoutMs ?? Math.max(this.timeoutMs, 15_000);
  }

  async requestWake(instanceId: string, action: WakeAction): Promise<WakeAccepted> {
    const { status, body } = await this.post(instanceActionPath(instanceId, action), {});
    if (status === 202 || status === 200) return this.parse(body, parseWakeAccepted, `${action} answer`);
    throw this.failure(status, body, `${action} ${instanceId}`);
  }

  async joinGroup(groupId: string, player: Player): Promise<GroupJoinAnswer> {
    const { status, body } = await this.post(groupJoinPath(groupId), playerBody(player), this.joinTimeoutMs);
    if (status === 200) return this.parse(body, parseGroupJoinAnswer, 'group join answer');
    throw this.failure(status, body, `join group ${groupId}`);
  }

  async requestTransfer(player: Player, instanceId: string): Promise<void> {
    const { status, body } = await this.post(ROUTER_TRANSFERS_PATH, { ...playerBody(player), instanceId });
    if (status !== 200 && status !== 201 && status !== 202) throw this.failure(status, body, `transfer ${player.name} to ${instanceId}`);
  }

  async claimTransfer(player: Player): Promise<TransferClaim | undefined> {
    const { status, body } = await this.post(TRANSFER_CLAIM_PATH, playerBody(player));
    if (status === 404) return undefined;
    if (status === 200) return this.parse(body, parseTransferClaim, 'transfer claim');
    throw this.failure(status, body, 'transfer claim');
  }

  async postSessions(batch: RouterSessionsBatch): Promise<void> {
    const { status, body } = await this.post(ROUTER_SESSIONS_PATH, batch);
    if (status !== 204 && status !== 200) throw this.failure(status, body, 'session report');
  }

  private async post(path: string, payload: unknown, timeoutMs = this.timeoutMs): Promise<{ status: number; body: unknown }> {
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    let res: Response;
    let text: string;
    try {
      res = await this.fetch(`${this.options.baseUrl}${path}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await res.text();
    } catch (err) {
      throw new AppError('UPSTREAM_FAILED', `orchestrator unreachable (POST ${path}): ${(err as Error).message}`, { cause: err });
    }
    let body: unknown = undefined;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = undefined;
      }
    }
    return { status: res.status, body };
  }

  private parse<T>(body: unknown, parse: (v: unknown) => T, what: string): T {
    try {
      return parse(body);
    } catch (err) {
      // Not an outage: an answer this router cannot read (another version) stays unreadable when asked again.
      throw new AppError('UPSTREAM_FAILED', `orchestrator sent a bad ${what}: ${(err as Error).message}`, { retryable: false, cause: err });
    }
  }

  /** 4xx keeps the orchestrator's code and message (policy refusals are shown to players); 5xx is retryable. */
  private failure(status: number, body: unknown, what: string): AppError {
    const error = (body as { error?: { code?: unknown; message?: unknown; details?: { playerMessage?: unknown } } } | undefined)?.error;
    const message = typeof error?.message === 'string' ? error.message.slice(0, 300) : `${what} answered ${status}`;
    if (status >= 400 && status < 500) {
      const code =
        typeof error?.code === 'string' && error.code in ERROR_CATALOGUE
          ? (error.code as ErrorCode)
          : status === 403
            ? 'FORBIDDEN'
            : status === 409
              ? 'CONFLICT'
              : status === 401
                ? 'UNAUTHORIZED'
                : 'BAD_REQUEST';
      // The orchestrator's own code is kept even when the catalogue lacks it (CAPACITY_EXHAUSTED).
      // A refusal's player-facing reason (a join over the caps: "survival is full (4 of 4 worlds)") is kept for the disconnect.
      const playerMessage =
        typeof error?.details?.playerMessage === 'string' ? { playerMessage: error.details.playerMessage.slice(0, 200) } : {};
      // A 4xx is the orchestrator's answer (a refusal the player sees), never "unreachable", whatever its code's default.
      return new AppError(code, message, { retryable: false, details: { status, upstreamCode: error?.code, ...playerMessage } });
    }
    return new AppError('UPSTREAM_FAILED', message, { details: { status } });
  }
}
