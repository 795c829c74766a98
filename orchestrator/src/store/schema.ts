// Row types of the tables as Kysely sees them. Both dialects store the same
// shapes: timestamps as bigint epoch ms, JSON as text, booleans as 0/1.

import type { Generated } from 'kysely';

export interface HostsTable {
  id: string;
  status: string;
  status_reason: string | null;
  status_changed_at: number;
  control_url: string;
  game_address: string;
  resources: string;
  memory_capacity_mb: number;
  memory_reserved_mb: number;
  version: string;
  port_range: string;
  heartbeat_interval_ms: number;
  boot_id: string | null;
  inventory_digest: string | null;
  maintenance: string | null;
  first_seen_at: number;
  last_heartbeat_at: number;
  updated_at: number;
  /** sha256 (hex) of the host's own credential; null: never enrolled, or revoked. */
  credential_hash: Generated<string | null>;
  /** Bumped by every (re-)enrolment; null: a legacy host (shared agent token). */
  credential_generation: Generated<number | null>;
  enrolled_at: Generated<number | null>;
  credential_revoked_at: Generated<number | null>;
}

export interface JoinTokensTable {
  id: string;
  hashed_secret: string;
  agent_id: string | null;
  created_by: string;
  created_at: number;
  expires_at: number;
  used_at: number | null;
  used_by: string | null;
  revoked_at: number | null;
}

export interface LayersTable {
  id: string;
  checksum: string;
  size_bytes: number;
  created_at: number;
}

export interface TemplatesTable {
  name: string;
  version: string;
  spec: string;
  spec_hash: string;
  created_at: number;
}

export interface GroupsTable {
  id: string;
  kind: string;
  placement: string;
  caps: string;
  variants: string;
  scaling: string | null;
  /** JSON IdleTier[] or null = the system's default (0010). */
  idle_tiers: string | null;
  /** JSON BackupPolicy or null (0007). */
  backup: string | null;
  created_at: number;
  updated_at: number;
}

export interface InstancesTable {
  id: string;
  name: string;
  group_id: string;
  variant_id: string;
  host_id: string | null;
  session_id: string | null;
  state: string;
  state_reason: string | null;
  state_changed_at: number;
  desired_state: string;
  observed: string | null;
  endpoint: string | null;
  host_port: number | null;
  memory_mb: number;
  memory_reserved: number;
  settings: string;
  secret_settings: string;
  pending_changes: string;
  container_config: string;
  container_config_pending: number;
  revision: number;
  user_spec: string;
  crash_loop: string;
  maintenance: string | null;
  active_action: string | null;
  players: string | null;
  deletion: string | null;
  bridge_token_hash: string | null;
  fleet: string | null;
  version: number;
  created_at: number;
  updated_at: number;
}

export interface HistoryTable {
  id: Generated<number>;
  instance_id: string;
  at: number;
  from_state: string | null;
  to_state: string;
  reason: string;
  actor: string | null;
  command_id: string | null;
  details: string | null;
}

export interface RevisionsTable {
  instance_id: string;
  revision: number;
  created_at: number;
  actor: string | null;
  reason: string;
  config: string;
}

export interface CommandsTable {
  /** Creation order; per-instance ordering of claims relies on it. */
  seq: Generated<number>;
  id: string;
  instance_id: string | null;
  host_id: string | null;
  kind: string;
  payload: string;
  status: string;
  attempts: number;
  max_attempts: number;
  next_attempt_at: number;
  last_error: string | null;
  result: string | null;
  request_id: string;
  claimed_by: string | null;
  lease_until: number | null;
  created_at: number;
  updated_at: number;
  completed_at: number | null;
}

export interface TokensTable {
  id: string;
  name: string;
  hashed_secret: string;
  scopes: string;
  created_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

export interface AuditTable {
  id: Generated<number>;
  at: number;
  actor: string;
  action: string;
  target_kind: string;
  target_id: string | null;
  params: string;
  result: string;
  error_code: string | null;
  request_id: string | null;
}

export interface SessionsTable {
  id: string;
  group_id: string | null;
  instance_id: string;
  status: string;
  metadata: string;
  created_at: number;
  released_at: number | null;
}

export interface TransfersTable {
  id: string;
  player: string;
  /** Lowercased player name: logins match case-insensitively. */
  player_key: string;
  player_uuid: string | null;
  target: string;
  status: string;
  resolved_instance_id: string | null;
  reason: string | null;
  created_at: number;
  expires_at: number;
  consumed_at: number | null;
}

export interface PlayerSessionsTable {
  id: string;
  router_id: string;
  player_name: string;
  player_uuid: string | null;
  instance_id: string | null;
  client_address: string | null;
  status: string;
  reason: string | null;
  connected_at: number;
  disconnected_at: number | null;
}

export interface SystemSettingsTable {
  key: string;
  /** JSON text. */
  value: string;
  updated_at: number;
}

export interface UnclaimedContainersTable {
  host_id: string;
  instance_id: string;
  group_id: string | null;
  variant_id: string | null;
  first_seen_at: number;
}

export interface StoredBackupsTable {
  instance_id: string;
  backup_id: string;
  sha256: string;
  size_bytes: number;
  created_at: number;
  stored_at: number;
  origin_host: string | null;
  stored_path: string;
  /** JSON array or null. */
  paths: string | null;
  trigger: string;
}

export interface BackupPoliciesTable {
  instance_id: string;
  /** JSON BackupPolicy or null. */
  policy: string | null;
  last_scheduled_at: number | null;
  updated_at: number;
}

export interface InstallationRequestsTable {
  id: string;
  requested_by: string;
  group_id: string;
  variant_id: string;
  name: string | null;
  /** JSON text: {settings?, note?}. */
  suggested: string;
  status: string;
  decided_by: string | null;
  decision_note: string | null;
  instance_id: string | null;
  created_at: number;
  decided_at: number | null;
}

export interface LeasesTable {
  name: string;
  holder: string;
  epoch: number;
  expires_at: number;
}

export interface WebSessionsTable {
  id_hash: string;
  token_id: string | null;
  principal_kind: string;
  name: string;
  /** JSON array of scopes. */
  scopes: string;
  created_at: number;
  expires_at: number;
  /** Preset-admin sessions: HMAC-SHA256(session id, ENDERCLOUD_ADMIN_TOKEN) in hex; null otherwise (0013). */
  preset_seal: string | null;
}

export interface SchedulesTable {
  id: string;
  instance_id: string;
  name: string;
  cron: string;
  enabled: number;
  only_when_online: number;
  /** JSON ScheduleTask[]. */
  tasks: string;
  next_run_at: number | null;
  last_run_at: number | null;
  last_result: string | null;
  last_error: string | null;
  running_since: number | null;
  created_at: number;
  updated_at: number;
}

export interface Database {
  hosts: HostsTable;
  template_layers: LayersTable;
  templates: TemplatesTable;
  groups: GroupsTable;
  instances: InstancesTable;
  instance_history: HistoryTable;
  config_revisions: RevisionsTable;
  commands: CommandsTable;
  api_tokens: TokensTable;
  audit_events: AuditTable;
  sessions: SessionsTable;
  transfers: TransfersTable;
  player_sessions: PlayerSessionsTable;
  system_settings: SystemSettingsTable;
  unclaimed_containers: UnclaimedContainersTable;
  installation_requests: InstallationRequestsTable;
  leases: LeasesTable;
  stored_backups: StoredBackupsTable;
  backup_policies: BackupPoliciesTable;
  web_sessions: WebSessionsTable;
  schedules: SchedulesTable;
  join_tokens: JoinTokensTable;
}
