// The answers the server page and the create form read, typed by hand until
// the shared contract (orchestrator/src/contracts) is imported by the panel:
// each interface names the route it describes and holds only the fields used.

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** GET /instances/:id/history → `history[]`. */
export interface HistoryEntry {
  at: string;
  from: string | null;
  to: string;
  reason: string | null;
  actor: string | null;
}

/** GET /audit → `entries[]` (admin). */
export interface AuditEntry {
  id: number;
  at: string;
  actor: string;
  action: string;
  targetKind: string | null;
  targetId: string | null;
  params: JsonValue;
  result: string;
  errorCode: string | null;
}

/** A pending change of GET /instances/:id → `pendingChanges[]`. */
export interface PendingChange {
  key: string;
  value?: JsonValue;
  hidden?: boolean;
  secret?: boolean;
  mode: string;
  requestedAt: string;
}

/** GET /instances/:id (the fields the server page reads). */
export interface InstanceView {
  id: string;
  name: string;
  groupId: string;
  variantId: string;
  hostId: string | null;
  state: string;
  stateReason: string | null;
  desiredState: string;
  observedState: string | null;
  /** The last Docker state seen; `startedAt` (epoch ms) moves when a container (re)starts. */
  observed: { startedAt?: number } | null;
  /** The configuration revision: an update or a replacement makes a new one. */
  revision: number;
  endpoint: { host: string; port: number } | null;
  memoryMb: number;
  players: { online: number; max: number; at: string | null } | null;
  pendingChanges: PendingChange[];
  crashLoop: { tripped: boolean; trippedAt: string | null };
  maintenance: { enabled: boolean; message: string | null } | null;
  activeAction: { kind: string; commandId: string; startedAt: string | null } | null;
  /** The power actions this caller may run now (lifecycle.md "Actions and refusals"). */
  actions?: string[];
  image: string;
  settings: Record<string, JsonValue>;
  hiddenSettings?: string[];
  secretSettings: string[];
}

/** POST /instances/:id/console. */
export interface ConsoleAnswer {
  via: 'rcon' | 'stdin';
  response: string | null;
}

/** GET /instances/:id/stats: one sample (docs/panel.md "Console graphs"). */
export interface StatsSample {
  at: number;
  cpuPercent: number | null;
  memoryBytes: number;
  memoryLimitBytes: number;
  networkRxBytes: number;
  networkTxBytes: number;
}

export interface StatsAnswer {
  intervalMs: number;
  samples: StatsSample[];
}

/** A template variable (GET /templates/:name/versions/:version → `variables[]`). */
export interface TemplateVariable {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'enum';
  description?: string;
  env?: string;
  default?: JsonValue;
  required?: boolean;
  secret?: boolean;
  validation?: { pattern?: string; min?: number; max?: number; minLength?: number; maxLength?: number; values?: string[] };
  apply?: 'immediate' | 'restart_required';
  operatorOnly?: boolean;
  hidden?: boolean;
  booleanValues?: { true: string; false: string };
}

/** GET /templates/:name/versions/:version (the fields the panel reads). */
export interface TemplateView {
  name: string;
  version: string;
  image: string;
  variables: TemplateVariable[];
  resources: { memoryMb: number; cpus?: number };
  command?: string[];
  stdin?: boolean;
  stop: { rcon?: { port: number; passwordVariable: string } };
  /** The image choices an egg offers (label → image). */
  images?: Record<string, string>;
}

/** GET /groups → `groups[]`. */
export interface GroupView {
  id: string;
  kind: string;
  variants: { id: string; template: { name: string; version: string } }[];
}

/** POST /instances/preview (the fields the words read). */
export interface PreviewAnswer {
  wouldCreate: boolean;
  problems: string[];
  name: string;
  group: { id: string; kind: string; placement: string };
  variant: string;
  template: { name: string; version: string };
  image: string;
  settings: Record<string, JsonValue>;
  secrets: { name: string; generatedAtCreation: boolean }[];
  resources: { memoryMb: number; cpus?: number };
  ports: { containerPort: number; hostPort: string | null; rcon?: { port: number; published: boolean } };
  dataPaths: string[];
  start: boolean;
  placement: { hostId: string; memoryMb: number; memoryFreeMb: number } | null;
  caps: { group: { limit: number | null; left: number | null }; total: { limit: number | null; left: number | null } };
}

/** POST /instances → the created instance (its id). */
export interface CreatedAnswer {
  id: string;
}

/** GET /instances/:id/files → `entries[]` (API-FILES.md "Files"). */
export interface FileEntry {
  name: string;
  path: string;
  type: 'file' | 'directory' | 'symlink';
  size: number;
  modifiedAt: number;
  mode: string;
}

export interface FileList {
  path: string;
  entries: FileEntry[];
}
