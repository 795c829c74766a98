// Installation requests (docs/lifecycle.md "Installation requests"): a user asks for an instance; an
// administrator reviews the suggested values and approves (the normal creation
// path runs) or rejects. A request never creates anything by itself.

import type { EpochMs, JsonObject } from './common.js';

export const INSTALLATION_REQUEST_STATUSES = ['pending', 'approved', 'rejected'] as const;
export type InstallationRequestStatus = (typeof INSTALLATION_REQUEST_STATUSES)[number];

/** The requester's suggestions; the administrator reviews them before anything is created. */
export interface InstallationSuggestion {
  settings?: JsonObject;
  note?: string;
}

export interface InstallationRequest {
  id: string;
  /** Token name of the requester. */
  requestedBy: string;
  groupId: string;
  variantId: string;
  name: string | null;
  suggested: InstallationSuggestion;
  status: InstallationRequestStatus;
  decidedBy: string | null;
  decisionNote: string | null;
  /** The instance created on approval. */
  instanceId: string | null;
  createdAt: EpochMs;
  decidedAt: EpochMs | null;
}
