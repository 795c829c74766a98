// Initial schema. Written once for both dialects; the only differences are
// the auto-increment column types (SQLite integer rowid vs PostgreSQL bigserial).

import { sql, type Kysely } from 'kysely';
import type { StoreDialect } from './index.js';

export async function up(db: Kysely<unknown>, dialect: StoreDialect): Promise<void> {
  const serialPk = dialect === 'postgres' ? 'bigserial' : 'integer';
  const ts = 'bigint';

  await db.schema
    .createTable('hosts')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('ONLINE','RECOVERING','OFFLINE','MAINTENANCE')`))
    .addColumn('status_reason', 'text')
    .addColumn('status_changed_at', ts, (c) => c.notNull())
    .addColumn('control_url', 'text', (c) => c.notNull())
    .addColumn('game_address', 'text', (c) => c.notNull())
    .addColumn('resources', 'text', (c) => c.notNull())
    .addColumn('memory_capacity_mb', 'integer', (c) => c.notNull())
    .addColumn('memory_reserved_mb', 'integer', (c) =>
      c
        .notNull()
        .defaultTo(0)
        .check(sql`memory_reserved_mb >= 0`),
    )
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('port_range', 'text', (c) => c.notNull())
    .addColumn('heartbeat_interval_ms', 'integer', (c) => c.notNull())
    .addColumn('boot_id', 'text')
    .addColumn('maintenance', 'text')
    .addColumn('first_seen_at', ts, (c) => c.notNull())
    .addColumn('last_heartbeat_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('template_layers')
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('checksum', 'text', (c) => c.notNull())
    .addColumn('size_bytes', 'bigint', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('template_layers_pk', ['id', 'checksum'])
    .execute();

  await db.schema
    .createTable('templates')
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('version', 'text', (c) => c.notNull())
    .addColumn('spec', 'text', (c) => c.notNull())
    .addColumn('spec_hash', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addPrimaryKeyConstraint('templates_pk', ['name', 'version'])
    .execute();

  await db.schema
    .createTable('groups')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('placement', 'text', (c) => c.notNull())
    .addColumn('caps', 'text', (c) => c.notNull())
    .addColumn('variants', 'text', (c) => c.notNull())
    .addColumn('scaling', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();

  await db.schema
    .createTable('instances')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('group_id', 'text', (c) => c.notNull())
    .addColumn('variant_id', 'text', (c) => c.notNull())
    .addColumn('host_id', 'text')
    .addColumn('session_id', 'text')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('state_reason', 'text')
    .addColumn('state_changed_at', ts, (c) => c.notNull())
    .addColumn('desired_state', 'text', (c) => c.notNull())
    .addColumn('observed', 'text')
    .addColumn('endpoint', 'text')
    .addColumn('host_port', 'integer')
    .addColumn('memory_mb', 'integer', (c) => c.notNull())
    .addColumn('settings', 'text', (c) => c.notNull())
    .addColumn('secret_settings', 'text', (c) => c.notNull())
    .addColumn('pending_changes', 'text', (c) => c.notNull())
    .addColumn('container_config', 'text', (c) => c.notNull())
    .addColumn('container_config_pending', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addColumn('user_spec', 'text', (c) => c.notNull())
    .addColumn('crash_loop', 'text', (c) => c.notNull())
    .addColumn('maintenance', 'text')
    .addColumn('active_action', 'text')
    .addColumn('players', 'text')
    .addColumn('deletion', 'text')
    .addColumn('bridge_token_hash', 'text')
    .addColumn('version', 'integer', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .execute();
  await db.schema.createIndex('instances_group_idx').on('instances').column('group_id').execute();
  await db.schema.createIndex('instances_host_idx').on('instances').column('host_id').execute();
  await db.schema.createIndex('instances_state_idx').on('instances').column('state').execute();

  await db.schema
    .createTable('instance_history')
    .addColumn('id', serialPk, (c) => c.primaryKey().$call((b) => (dialect === 'sqlite' ? b.autoIncrement() : b)))
    .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
    .addColumn('at', ts, (c) => c.notNull())
    .addColumn('from_state', 'text')
    .addColumn('to_state', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('actor', 'text')
    .addColumn('command_id', 'text')
    .addColumn('details', 'text')
    .execute();
  await db.schema.createIndex('instance_history_instance_idx').on('instance_history').columns(['instance_id', 'id']).execute();

  await db.schema
    .createTable('config_revisions')
    .addColumn('instance_id', 'text', (c) => c.notNull().references('instances.id').onDelete('cascade'))
    .addColumn('revision', 'integer', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('actor', 'text')
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('config', 'text', (c) => c.notNull())
    .addPrimaryKeyConstraint('config_revisions_pk', ['instance_id', 'revision'])
    .execute();

  await db.schema
    .createTable('commands')
    .addColumn('seq', serialPk, (c) => c.primaryKey().$call((b) => (dialect === 'sqlite' ? b.autoIncrement() : b)))
    .addColumn('id', 'text', (c) => c.notNull().unique())
    .addColumn('instance_id', 'text')
    .addColumn('host_id', 'text')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull().check(sql`status in ('pending','dispatched','succeeded','failed')`))
    .addColumn('attempts', 'integer', (c) => c.notNull())
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('next_attempt_at', ts, (c) => c.notNull())
    .addColumn('last_error', 'text')
    .addColumn('result', 'text')
    .addColumn('request_id', 'text', (c) => c.notNull())
    .addColumn('claimed_by', 'text')
    .addColumn('lease_until', ts)
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('updated_at', ts, (c) => c.notNull())
    .addColumn('completed_at', ts)
    .execute();
  await db.schema.createIndex('commands_due_idx').on('commands').columns(['status', 'next_attempt_at']).execute();
  await db.schema.createIndex('commands_instance_idx').on('commands').columns(['instance_id', 'status']).execute();

  await db.schema
    .createTable('api_tokens')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('name', 'text', (c) => c.notNull().unique())
    .addColumn('hashed_secret', 'text', (c) => c.notNull().unique())
    .addColumn('scopes', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('last_used_at', ts)
    .addColumn('revoked_at', ts)
    .execute();

  await db.schema
    .createTable('audit_events')
    .addColumn('id', serialPk, (c) => c.primaryKey().$call((b) => (dialect === 'sqlite' ? b.autoIncrement() : b)))
    .addColumn('at', ts, (c) => c.notNull())
    .addColumn('actor', 'text', (c) => c.notNull())
    .addColumn('action', 'text', (c) => c.notNull())
    .addColumn('target_kind', 'text', (c) => c.notNull())
    .addColumn('target_id', 'text')
    .addColumn('params', 'text', (c) => c.notNull())
    .addColumn('result', 'text', (c) => c.notNull())
    .addColumn('error_code', 'text')
    .addColumn('request_id', 'text')
    .execute();
  await db.schema.createIndex('audit_target_idx').on('audit_events').columns(['target_kind', 'target_id']).execute();

  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('group_id', 'text')
    .addColumn('instance_id', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('metadata', 'text', (c) => c.notNull())
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('released_at', ts)
    .execute();
  await db.schema.createIndex('sessions_instance_idx').on('sessions').column('instance_id').execute();

  await db.schema
    .createTable('transfers')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('player', 'text', (c) => c.notNull())
    .addColumn('player_key', 'text', (c) => c.notNull())
    .addColumn('player_uuid', 'text')
    .addColumn('target', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('resolved_instance_id', 'text')
    .addColumn('reason', 'text')
    .addColumn('created_at', ts, (c) => c.notNull())
    .addColumn('expires_at', ts, (c) => c.notNull())
    .addColumn('consumed_at', ts)
    .execute();
  await db.schema.createIndex('transfers_player_idx').on('transfers').columns(['player_key', 'status']).execute();

  await db.schema
    .createTable('player_sessions')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('router_id', 'text', (c) => c.notNull())
    .addColumn('player_name', 'text', (c) => c.notNull())
    .addColumn('player_uuid', 'text')
    .addColumn('instance_id', 'text')
    .addColumn('client_address', 'text')
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('reason', 'text')
    .addColumn('connected_at', ts, (c) => c.notNull())
    .addColumn('disconnected_at', ts)
    .execute();
  await db.schema.createIndex('player_sessions_instance_idx').on('player_sessions').columns(['instance_id', 'status']).execute();
  await db.schema.createIndex('player_sessions_router_idx').on('player_sessions').columns(['router_id', 'status']).execute();
}
