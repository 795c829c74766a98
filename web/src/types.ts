// The answers the server page and the create form read. Most are the public
// contract's own types (orchestrator/src/contracts/public-api, imported as the
// panel imports its rules); the template and the create preview are open
// objects there, so the fields the panel reads of them are typed here.

import type { Answer } from './api';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** GET /instances/:id/history → `history[]`. */
export type HistoryEntry = Answer<'GET /instances/:id/history'>['history'][number];
/** GET /audit → `entries[]` (admin). */
export type AuditEntry = Answer<'GET /audit'>['entries'][number];
/** GET /instances/:id; its settings (an open object in the contract) are JSON values by name. */
export type InstanceView = Omit<Answer<'GET /instances/:id'>, 'settings'> & { settings: Record<string, JsonValue> };
/** POST /instances/:id/console. */
export type ConsoleAnswer = Answer<'POST /instances/:id/console'>;
/** GET /instances/:id/stats (docs/panel.md "Console graphs"). */
export type StatsAnswer = Answer<'GET /instances/:id/stats'>;
export type StatsSample = StatsAnswer['samples'][number];
/** GET /groups → `groups[]`. */
export type GroupView = Answer<'GET /groups'>['groups'][number];
/** POST /instances → the created instance (its id). */
export type CreatedAnswer = Answer<'POST /instances'>;
/** GET /instances/:id/files. */
export type FileList = Answer<'GET /instances/:id/files'>;
export type FileEntry = FileList['entries'][number];

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
