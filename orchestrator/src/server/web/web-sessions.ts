// Panel sessions: POST /api/v1/session exchanges an API token for a random
// session id (32 bytes) kept in an HttpOnly, SameSite=Strict cookie; the store
// keeps its sha256 only (web_sessions), with the token it stands for. Every
// request re-reads the token, so revoking it ends its sessions at once. A
// preset-admin session carries a seal of the ENDERCLOUD_ADMIN_TOKEN it signed
// in with, checked per request: a restart with a rotated (or unset) preset ends it.

import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { SessionAuthenticator } from '../auth/guard.js';
import { hashSecret, type Principal, type TokenService } from '../auth/tokens.js';

export const SESSION_COOKIE = 'endercloud_session';
/** Sessions end this long after the login (a new login is needed; no sliding renewal). */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** Expired rows are removed at most this often (on a login). */
const SWEEP_EVERY_MS = 10 * 60 * 1000;

export interface WebSessionServiceOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  tokens: TokenService;
  /** ENDERCLOUD_ADMIN_TOKEN as configured now: preset-admin sessions are sealed with it and checked against it. */
  adminToken: string | undefined;
  /** ENDERCLOUD_PUBLIC_URL: its origin is accepted as a request's `Origin`. */
  publicUrl?: string | undefined;
  ttlMs?: number;
}

export class WebSessionService implements SessionAuthenticator {
  private lastSweep = 0;

  readonly publicOrigin: string | undefined;

  constructor(private readonly deps: WebSessionServiceOptions) {
    this.publicOrigin = deps.publicUrl === undefined ? undefined : new URL(deps.publicUrl).origin;
  }

  get ttlMs(): number {
    return this.deps.ttlMs ?? SESSION_TTL_MS;
  }

  cookieOf(request: FastifyRequest): string | undefined {
    return cookieValue(request.headers.cookie, SESSION_COOKIE);
  }

  /** A session for a valid token (not the agent token): its cookie value, or undefined. */
  async login(secret: string): Promise<{ sessionId: string; principal: Principal } | undefined> {
    const principal = await this.deps.tokens.authenticate(secret);
    if (!principal || (principal.kind !== 'token' && principal.kind !== 'preset-admin')) return undefined;
    const now = this.deps.clock.now();
    await this.sweep(now);
    const sessionId = randomBytes(32).toString('base64url');
    await this.deps.store.webSessions.create({
      idHash: hashSecret(sessionId),
      tokenId: principal.tokenId,
      principalKind: principal.kind,
      name: principal.name,
      scopes: [...principal.scopes],
      createdAt: now,
      expiresAt: now + this.ttlMs,
      presetSeal: principal.kind === 'preset-admin' ? presetSeal(sessionId, this.deps.adminToken!) : null,
    });
    return { sessionId, principal };
  }

  /**
   * The principal of a live session whose token is still valid. A preset-admin
   * session signed in under another ENDERCLOUD_ADMIN_TOKEN than the one
   * configured now is removed and refused with a message saying so (401).
   */
  async authenticate(sessionId: string): Promise<Principal | undefined> {
    if (sessionId.length < 16 || sessionId.length > 128) return undefined;
    const idHash = hashSecret(sessionId);
    const record = await this.deps.store.webSessions.get(idHash);
    if (!record || record.expiresAt <= this.deps.clock.now()) return undefined;
    if (record.principalKind === 'preset-admin') {
      const stale = this.presetChange(sessionId, record.presetSeal);
      if (stale !== undefined) {
        await this.deps.store.webSessions.delete(idHash);
        throw new AppError('UNAUTHORIZED', `${stale} since this panel session signed in with it: sign in again`);
      }
      return { kind: 'preset-admin', name: record.name, tokenId: null, scopes: record.scopes };
    }
    const token = record.tokenId === null ? undefined : await this.deps.store.tokens.get(record.tokenId);
    if (!token || token.revokedAt !== null) return undefined;
    return { kind: 'token', name: token.name, tokenId: token.id, scopes: token.scopes };
  }

  /** Why a preset-admin session's seal no longer holds, or undefined when it does. */
  private presetChange(sessionId: string, seal: string | null): string | undefined {
    if (this.deps.adminToken === undefined) return 'ENDERCLOUD_ADMIN_TOKEN is no longer configured';
    const expected = Buffer.from(presetSeal(sessionId, this.deps.adminToken), 'hex');
    // A session from before seals existed (migration 0013) cannot show which preset it had: refused like a changed one.
    const given = seal === null ? Buffer.alloc(0) : Buffer.from(seal, 'hex');
    if (given.length === expected.length && timingSafeEqual(given, expected)) return undefined;
    return 'the admin token (ENDERCLOUD_ADMIN_TOKEN) changed';
  }

  async logout(sessionId: string): Promise<void> {
    await this.deps.store.webSessions.delete(hashSecret(sessionId));
  }

  private async sweep(now: number): Promise<void> {
    if (now - this.lastSweep < SWEEP_EVERY_MS) return;
    this.lastSweep = now;
    await this.deps.store.webSessions
      .deleteExpired(now)
      .catch((err: unknown) => this.deps.logger.warn({ err: (err as Error).message }, 'could not remove expired web sessions'));
  }
}

/**
 * HMAC-SHA256 of the preset keyed by the session id. The id is never stored
 * (only its sha256), so the database alone cannot test guesses of the preset.
 */
function presetSeal(sessionId: string, adminToken: string): string {
  return createHmac('sha256', sessionId).update(adminToken, 'utf8').digest('hex');
}

/** The value of one cookie in a Cookie header (no cookie library: one name is all the API reads). */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}
