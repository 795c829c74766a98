// The read side of the HTTP API: every list and lookup a route answers with,
// one method each, so routes never hold the store (docs/architecture.md
// "Boundaries"). Writes go through the services.

import type {
  ApiToken,
  AuditEvent,
  Command,
  CommandStatus,
  ConfigRevision,
  Group,
  Host,
  HostStatus,
  Instance,
  InstanceHistoryEntry,
  JsonObject,
  TemplateLayer,
  TemplateVersion,
} from '../../domain/index.js';
import type { IdleTier } from '../../provisioning/scaling-policy.js';
import type { InstanceFilter, Store } from '../../store/store.js';
import { fleetView } from '../provisioning/fleet-status.js';

export class ReadQueries {
  constructor(private readonly store: Store) {}

  /** The database behind the store: `sqlite` or `postgres`. */
  get dialect(): Store['dialect'] {
    return this.store.dialect;
  }

  layers(filter: { id?: string } = {}): Promise<TemplateLayer[]> {
    return this.store.layers.list(filter);
  }

  templates(filter: { name?: string } = {}): Promise<TemplateVersion[]> {
    return this.store.templates.list(filter);
  }

  template(name: string, version: string): Promise<TemplateVersion | undefined> {
    return this.store.templates.get(name, version);
  }

  groups(): Promise<Group[]> {
    return this.store.groups.list();
  }

  group(id: string): Promise<Group | undefined> {
    return this.store.groups.get(id);
  }

  hosts(filter: { statuses?: HostStatus[] } = {}): Promise<Host[]> {
    return this.store.hosts.list(filter);
  }

  host(id: string): Promise<Host | undefined> {
    return this.store.hosts.get(id);
  }

  /** How many instances each host has placed on it (hosts with none are absent). */
  instanceCountsByHost(): Promise<Record<string, number>> {
    return this.store.instances.countByHost();
  }

  instances(filter: InstanceFilter = {}): Promise<Instance[]> {
    return this.store.instances.list(filter);
  }

  /** State changes, newest first. */
  history(instanceId: string, limit: number): Promise<InstanceHistoryEntry[]> {
    return this.store.history.list(instanceId, { limit });
  }

  revisions(instanceId: string): Promise<ConfigRevision[]> {
    return this.store.revisions.list(instanceId);
  }

  command(id: string): Promise<Command | undefined> {
    return this.store.commands.get(id);
  }

  commands(filter: { instanceId?: string; hostId?: string; statuses?: CommandStatus[]; limit: number }): Promise<Command[]> {
    return this.store.commands.list(filter);
  }

  /** Every API token (the views never show a secret: only its hash is stored). */
  tokens(): Promise<ApiToken[]> {
    return this.store.tokens.list();
  }

  /** Audit entries, newest first. */
  audit(filter: { targetKind?: string; targetId?: string; actor?: string; beforeId?: number; limit: number }): Promise<AuditEvent[]> {
    return this.store.audit.list(filter);
  }

  /** GET /groups/:id/fleet: the buffer, the counts and what each instance waits for. */
  fleet(group: Group, systemTiers: readonly IdleTier[], now: number): Promise<JsonObject> {
    return fleetView(this.store, group, systemTiers, now);
  }
}
