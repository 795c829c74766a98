// API tokens: high-entropy secrets shown once, stored as sha256 only, looked up
// by that hash (so are enrolled hosts' credentials); the preset admin token and
// the shared agent token are compared in constant time. Also creates the first-start admin token file (mode 0600).

import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { chmod, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ApiToken } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { unknownScopes } from './scopes.js';

export const ADMIN_TOKEN_FILE = 'admin-token';
const TOKEN_PREFIX = 'ect_';
/** lastUsedAt is a hint, not an audit trail: write it at most once a minute per token. */
const TOUCH_EVERY_MS = 60_000;

export interface Principal {
  /** `host`: an enrolled agent's own credential (bound to `agentId`); `agent`: the legacy shared agent token. */
  kind: 'token' | 'preset-admin' | 'agent' | 'anonymous-agent' | 'host' | 'join-token';
  /** Token name (audit actor). */
  name: string;
  tokenId: string | null;
  scopes: readonly string[];
  /** The one agent id a host credential may act as. */
  agentId?: string;
}

/** Host credentials (services/host-enrolment.ts issues them) and join tokens start so: the guard tells them apart by it. */
export const HOST_CREDENTIAL_PREFIX = 'ech_';
export const JOIN_TOKEN_PREFIX = 'ecj_';

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

function sha256(secret: string): Buffer {
  return createHash('sha256').update(secret, 'utf8').digest();
}

export function generateSecret(): string {
  return TOKEN_PREFIX + randomBytes(32).toString('base64url');
}

export interface TokenServiceOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  adminToken: string | undefined;
  agentToken: string | undefined;
}

export class TokenService {
  private readonly touched = new Map<string, number>();
  /** Told of each revocation by this replica (open SFTP sessions close at once; others re-check the store). */
  private readonly revokedListeners = new Set<(id: string) => void>();
  /** sha256 of the configured secrets, hashed once (every request compares against them in constant time). */
  private readonly adminDigest: Buffer | undefined;
  private readonly agentDigest: Buffer | undefined;

  constructor(private readonly deps: TokenServiceOptions) {
    this.adminDigest = deps.adminToken === undefined ? undefined : sha256(deps.adminToken);
    this.agentDigest = deps.agentToken === undefined ? undefined : sha256(deps.agentToken);
  }

  get agentTokenConfigured(): boolean {
    return this.deps.agentToken !== undefined;
  }

  isAgentToken(secret: string | undefined): boolean {
    return secret !== undefined && this.agentDigest !== undefined && timingSafeEqual(sha256(secret), this.agentDigest);
  }

  /** An enrolled host's principal for its credential (ech_…), or undefined for an unknown or revoked one. */
  async authenticateHost(secret: string): Promise<Principal | undefined> {
    if (!secret.startsWith(HOST_CREDENTIAL_PREFIX)) return undefined;
    const host = await this.deps.store.hosts.findByCredentialHash(hashSecret(secret));
    return host && { kind: 'host', name: `host ${host.id}`, tokenId: null, scopes: ['agent'], agentId: host.id };
  }

  /** The principal behind a bearer secret, or undefined for an unknown/revoked one. */
  async authenticate(secret: string): Promise<Principal | undefined> {
    const given = sha256(secret);
    if (this.adminDigest !== undefined && timingSafeEqual(given, this.adminDigest)) {
      return { kind: 'preset-admin', name: 'admin (preset)', tokenId: null, scopes: ['admin'] };
    }
    if (this.agentDigest !== undefined && timingSafeEqual(given, this.agentDigest))
      return { kind: 'agent', name: 'agent', tokenId: null, scopes: ['agent'] };
    if (!secret.startsWith(TOKEN_PREFIX)) return undefined;
    const token = await this.deps.store.tokens.findByHashedSecret(hashSecret(secret));
    if (!token || token.revokedAt !== null) return undefined;
    await this.touch(token.id);
    return { kind: 'token', name: token.name, tokenId: token.id, scopes: token.scopes };
  }

  private async touch(id: string): Promise<void> {
    const now = this.deps.clock.now();
    if (now - (this.touched.get(id) ?? -Infinity) < TOUCH_EVERY_MS) return;
    this.touched.set(id, now);
    await this.deps.store.tokens
      .touch(id, now)
      .catch((err: unknown) => this.deps.logger.warn({ err, tokenId: id }, 'could not record token use'));
  }

  /** Creates a token; the secret is returned here and never again. */
  async create(name: string, scopes: readonly string[]): Promise<{ token: ApiToken; secret: string }> {
    const unknown = unknownScopes(scopes);
    if (unknown.length > 0)
      throw new AppError('VALIDATION_FAILED', `body/scopes: unknown scope ${unknown.map((s) => JSON.stringify(s)).join(', ')}`);
    if (scopes.length === 0) throw new AppError('VALIDATION_FAILED', 'body/scopes must name at least one scope');
    const secret = generateSecret();
    const token = await this.deps.store.tokens.create({
      id: `tok_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
      name,
      hashedSecret: hashSecret(secret),
      scopes: [...new Set(scopes)],
      createdAt: this.deps.clock.now(),
      lastUsedAt: null,
      revokedAt: null,
    });
    return { token, secret };
  }

  /** False once the token is revoked or gone: long-lived sessions (SFTP) re-check their token with it. */
  async isActive(id: string): Promise<boolean> {
    const token = await this.deps.store.tokens.get(id);
    return token !== undefined && token.revokedAt === null;
  }

  /** Calls `listener` with the id of every token this replica revokes; returns the unsubscribe. */
  onRevoked(listener: (id: string) => void): () => void {
    this.revokedListeners.add(listener);
    return () => this.revokedListeners.delete(listener);
  }

  /** Revokes a token (its secret stops authenticating at once) and returns it; NOT_FOUND for an unknown id. */
  async revoke(id: string): Promise<ApiToken> {
    if (!(await this.deps.store.tokens.get(id))) throw new AppError('NOT_FOUND', `token ${id} does not exist`);
    await this.deps.store.tokens.revoke(id, this.deps.clock.now());
    for (const listener of this.revokedListeners) listener(id);
    return (await this.deps.store.tokens.get(id))!;
  }

  /**
   * First start: unless a preset admin token is configured, make sure an admin
   * token exists and sits in `<dataDir>/admin-token` (0600). A file from an
   * earlier start is re-registered if the database was replaced.
   */
  async ensureAdminToken(dataDir: string): Promise<{ source: 'preset' | 'file' | 'generated' | 'existing'; file: string | null }> {
    if (this.deps.adminToken !== undefined) return { source: 'preset', file: null };
    const file = path.join(dataDir, ADMIN_TOKEN_FILE);
    const existing = await readFile(file, 'utf8').then(
      (s) => s.trim(),
      () => undefined,
    );
    if (existing) {
      if ((await stat(file)).mode & 0o077) await chmod(file, 0o600);
      const known = await this.deps.store.tokens.findByHashedSecret(hashSecret(existing));
      if (!known) await this.registerAdmin(existing);
      return { source: 'file', file };
    }
    const active = (await this.deps.store.tokens.list()).some((t) => t.revokedAt === null && t.scopes.includes('admin'));
    if (active) return { source: 'existing', file: null };
    const secret = generateSecret();
    // The file first: if the insert then fails, the next start re-registers it.
    await writeFile(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    await this.registerAdmin(secret);
    return { source: 'generated', file };
  }

  private async registerAdmin(secret: string): Promise<void> {
    const now = this.deps.clock.now();
    const taken = await this.deps.store.tokens.getByName('admin');
    await this.deps.store.tokens.create({
      id: `tok_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
      name: taken ? `admin-${now}` : 'admin',
      hashedSecret: hashSecret(secret),
      scopes: ['admin'],
      createdAt: now,
      lastUsedAt: null,
      revokedAt: null,
    });
  }
}
