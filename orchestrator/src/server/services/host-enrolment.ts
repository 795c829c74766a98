// One credential per host (issue 26). An admin creates a one-time join token
// (ecj_…, sha256 stored, optionally bound to one agent id); an agent trades it
// at POST /agents/enrol, in one transaction, for its own host credential
// (ech_…, sha256 stored on the host row) and the orchestrator's call
// credential for that agent, which is derived from the master key and the
// host's credential generation and never stored. Re-enrolment (a new join
// token for a known host) bumps the generation, so both old credentials stop
// working at once, and is the only way a known host's controlUrl changes.

import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { EnrolBody } from '../../contracts/agent-api.js';
import type { EpochMs, Host } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import type { JoinTokenRecord, Store } from '../../store/store.js';

export type { JoinTokenRecord };
import { HOST_CREDENTIAL_PREFIX, JOIN_TOKEN_PREFIX, hashSecret } from '../auth/tokens.js';
import type { Clock } from '../clock.js';
import type { MasterKey } from '../secrets/master-key.js';
import { toHostHeartbeat } from './heartbeat-input.js';

export const JOIN_TOKEN_DEFAULT_TTL_MS = 3_600_000;
export const JOIN_TOKEN_MAX_TTL_MS = 7 * 86_400_000;
/** The master key's purpose string for call credentials (master-key.ts derives one key per purpose). */
export const CALL_CREDENTIAL_PURPOSE = 'agent-call';

/**
 * The orchestrator's bearer for calling one agent: HMAC-SHA256 over
 * `agentId:generation` with the master key's `agent-call` key, base64url.
 * Every replica with the same master key computes the same value; nothing is stored.
 */
export class CallCredentials {
  private readonly key: Buffer;

  constructor(masterKey: MasterKey) {
    this.key = masterKey.derive(CALL_CREDENTIAL_PURPOSE);
  }

  of(agentId: string, generation: number): string {
    return createHmac('sha256', this.key).update(`${agentId}:${generation}`, 'utf8').digest('base64url');
  }
}

export interface HostEnrolmentOptions {
  store: Store;
  clock: Clock;
  callCredentials: CallCredentials;
}

export interface EnrolOutcome {
  host: Host;
  generation: number;
  hostCredential: string;
  callCredential: string;
  reenrolled: boolean;
  previousControlUrl: string | null;
  joinTokenId: string;
}

/** Why a join token no longer enrols, or 'active' while it does. */
export function joinTokenState(t: JoinTokenRecord, now: EpochMs): 'revoked' | 'used' | 'expired' | 'active' {
  if (t.revokedAt !== null) return 'revoked';
  if (t.usedAt !== null) return 'used';
  if (t.expiresAt <= now) return 'expired';
  return 'active';
}

export class HostEnrolmentService {
  constructor(private readonly deps: HostEnrolmentOptions) {}

  /** A join token; its secret is returned here and never again. */
  async createJoinToken(opts: { agentId?: string | undefined; ttlMs?: number | undefined }, actor: string) {
    const ttlMs = opts.ttlMs ?? JOIN_TOKEN_DEFAULT_TTL_MS;
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1000 || ttlMs > JOIN_TOKEN_MAX_TTL_MS)
      throw new AppError('VALIDATION_FAILED', `body/ttl must be between 1s and 7d (got ${ttlMs} ms)`, { details: { field: 'ttl' } });
    const secret = JOIN_TOKEN_PREFIX + randomBytes(32).toString('base64url');
    const now = this.deps.clock.now();
    const token = await this.deps.store.joinTokens.create({
      id: `jt_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
      hashedSecret: hashSecret(secret),
      agentId: opts.agentId ?? null,
      createdBy: actor,
      createdAt: now,
      expiresAt: now + ttlMs,
      usedAt: null,
      usedBy: null,
      revokedAt: null,
    });
    return { token, secret };
  }

  list(): Promise<JoinTokenRecord[]> {
    return this.deps.store.joinTokens.list();
  }

  /** Revokes an unused join token; NOT_FOUND for an unknown id. A used one is already spent (CONFLICT). */
  async revokeJoinToken(id: string): Promise<JoinTokenRecord> {
    const token = await this.deps.store.joinTokens.get(id);
    if (!token) throw new AppError('NOT_FOUND', `join token ${id} does not exist`);
    if (token.usedAt !== null)
      throw new AppError(
        'CONFLICT',
        `join token ${id} was already used by agent ${token.usedBy ?? '?'}: revoke the host credential instead`,
      );
    await this.deps.store.joinTokens.revoke(id, this.deps.clock.now());
    return (await this.deps.store.joinTokens.get(id))!;
  }

  /**
   * Consumes the join token and (re-)enrols the host, all in one transaction:
   * nothing is written when any check fails. 401 for an unknown, revoked,
   * used or expired token (the message says which), 403 for a token bound to
   * another agent id.
   */
  async enrol(joinSecret: string, body: EnrolBody): Promise<EnrolOutcome> {
    const heartbeat = toHostHeartbeat(body.agentId, body);
    const hostCredential = HOST_CREDENTIAL_PREFIX + randomBytes(32).toString('base64url');
    const now = this.deps.clock.now();
    return this.deps.store.transaction(async (tx) => {
      const token = await tx.joinTokens.findByHashedSecret(hashSecret(joinSecret));
      if (!token) throw new AppError('UNAUTHORIZED', 'unknown join token (ectl hosts join-token create makes one)');
      const state = joinTokenState(token, now);
      if (state === 'revoked') throw new AppError('UNAUTHORIZED', `join token ${token.id} was revoked: create a new one`);
      if (state === 'used')
        throw new AppError(
          'UNAUTHORIZED',
          `join token ${token.id} was already used (by agent ${token.usedBy ?? '?'} at ${new Date(token.usedAt!).toISOString()}): a join token enrols once`,
        );
      if (state === 'expired')
        throw new AppError(
          'UNAUTHORIZED',
          `join token ${token.id} expired at ${new Date(token.expiresAt).toISOString()}: create a new one`,
        );
      if (token.agentId !== null && token.agentId !== body.agentId)
        throw new AppError('FORBIDDEN', `join token ${token.id} enrols agent ${token.agentId} only, not ${body.agentId}`);
      if (!(await tx.joinTokens.consume(token.id, body.agentId, now)))
        throw new AppError('UNAUTHORIZED', `join token ${token.id} was used or revoked meanwhile: a join token enrols once`);
      const before = await tx.hosts.get(body.agentId);
      const { host, previousControlUrl } = await tx.hosts.enrol({ heartbeat, credentialHash: hashSecret(hostCredential) }, now);
      const generation = host.credentialGeneration!;
      return {
        host,
        generation,
        hostCredential,
        callCredential: this.deps.callCredentials.of(host.id, generation),
        reenrolled: before?.credentialGeneration !== undefined,
        previousControlUrl,
        joinTokenId: token.id,
      };
    });
  }

  /** Revokes a host's credential at once; the host goes OFFLINE by the normal detector and comes back only by re-enrolment. */
  async revokeCredential(id: string): Promise<Host> {
    const host = await this.deps.store.hosts.get(id);
    if (!host) throw new AppError('HOST_NOT_FOUND', `host ${id} is not registered`);
    if (host.credentialGeneration === undefined)
      throw new AppError(
        'CONFLICT',
        `host ${id} was never enrolled (it uses the legacy shared agent token): there is no host credential to revoke`,
      );
    return this.deps.store.hosts.revokeCredential(id, this.deps.clock.now());
  }
}
