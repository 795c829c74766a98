// API tokens (stored hashed) and the audit log.

import type { EpochMs, JsonObject } from './common.js';

export interface ApiToken {
  id: string;
  name: string;
  /** sha256 hex of the secret part; the secret itself is never stored. */
  hashedSecret: string;
  scopes: string[];
  createdAt: EpochMs;
  lastUsedAt: EpochMs | null;
  revokedAt: EpochMs | null;
}

export interface AuditEvent {
  id: number;
  at: EpochMs;
  /** Token name, `agent`, or `system`. */
  actor: string;
  action: string;
  targetKind: string;
  targetId: string | null;
  /** Parameters with secrets redacted before they reach the store. */
  params: JsonObject;
  result: 'ok' | 'error';
  errorCode: string | null;
  requestId: string | null;
}
