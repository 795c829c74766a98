// Layers, templates and groups: the catalogue an operator applies. Layers and
// template versions are immutable; re-putting an identical one is a no-op.

import type { Selectable } from 'kysely';
import type { Group, ScalingPolicy, TemplateLayer, TemplateVersion } from '../../domain/index.js';
import type { IdleTier } from '../../provisioning/scaling-policy.js';
import { AppError } from '../../shared/errors.js';
import { isUniqueViolation, type StoreContext } from '../context.js';
import { canonicalJson, fromJson, fromJsonOrNull, toJson, toJsonOrNull } from '../json.js';
import type { GroupsTable, LayersTable, TemplatesTable } from '../schema.js';
import type { GroupRepository, LayerRepository, TemplateRepository } from '../store.js';

function toLayer(r: Selectable<LayersTable>): TemplateLayer {
  return { id: r.id, checksum: r.checksum, sizeBytes: Number(r.size_bytes), createdAt: Number(r.created_at) };
}

export class KyselyLayerRepository implements LayerRepository {
  constructor(private readonly ctx: StoreContext) {}

  async put(layer: TemplateLayer): Promise<{ layer: TemplateLayer; created: boolean }> {
    const inserted = await this.ctx.db
      .insertInto('template_layers')
      .values({ id: layer.id, checksum: layer.checksum, size_bytes: layer.sizeBytes, created_at: layer.createdAt })
      .onConflict((oc) => oc.columns(['id', 'checksum']).doNothing())
      .returningAll()
      .executeTakeFirst();
    if (inserted) return { layer: toLayer(inserted), created: true };
    const existing = await this.get(layer.id, layer.checksum);
    if (!existing) throw new AppError('INTERNAL', `layer ${layer.id}/${layer.checksum} vanished during put`);
    if (existing.sizeBytes !== layer.sizeBytes) {
      throw new AppError(
        'IMMUTABLE',
        `layer ${layer.id}/${layer.checksum} already exists with ${existing.sizeBytes} bytes, not ${layer.sizeBytes}`,
      );
    }
    return { layer: existing, created: false };
  }

  async get(id: string, checksum: string): Promise<TemplateLayer | undefined> {
    const row = await this.ctx.db
      .selectFrom('template_layers')
      .selectAll()
      .where('id', '=', id)
      .where('checksum', '=', checksum)
      .executeTakeFirst();
    return row && toLayer(row);
  }

  async list(filter: { id?: string } = {}): Promise<TemplateLayer[]> {
    let q = this.ctx.db.selectFrom('template_layers').selectAll().orderBy('id').orderBy('created_at').orderBy('checksum');
    if (filter.id !== undefined) q = q.where('id', '=', filter.id);
    return (await q.execute()).map(toLayer);
  }

  delete(id: string, checksum?: string): Promise<TemplateLayer[]> {
    return this.ctx.atomic(async (db) => {
      let q = db.selectFrom('template_layers').selectAll().where('id', '=', id);
      if (checksum !== undefined) q = q.where('checksum', '=', checksum);
      const layers = (await q.execute()).map(toLayer);
      if (layers.length === 0)
        throw new AppError('LAYER_NOT_FOUND', `layer ${id}${checksum ? ` with checksum ${checksum}` : ''} does not exist`);
      const refs = await layerReferences(db);
      const users = layers.flatMap((l) => refs.get(refKey(l)) ?? []);
      if (users.length > 0) {
        throw new AppError(
          'CONFLICT',
          `layer ${id} is still used by ${[...new Set(users)].slice(0, 5).join(', ')}; change or delete those first`,
          { details: { users: [...new Set(users)] } },
        );
      }
      for (const l of layers) await db.deleteFrom('template_layers').where('id', '=', l.id).where('checksum', '=', l.checksum).execute();
      return layers;
    });
  }

  async listUnreferenced(): Promise<TemplateLayer[]> {
    const refs = await layerReferences(this.ctx.db);
    return (await this.list()).filter((l) => !refs.has(refKey(l)));
  }
}

const refKey = (l: { id: string; checksum: string }): string => `${l.id}@${l.checksum}`;

/** Who uses each `id@checksum`: template versions, variants (extraLayers) and instances (their container's layers). */
async function layerReferences(db: StoreContext['db']): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  const add = (refs: readonly { id: string; checksum: string }[] | undefined, user: string) => {
    for (const r of refs ?? []) out.set(refKey(r), [...(out.get(refKey(r)) ?? []), user]);
  };
  for (const t of await db.selectFrom('templates').select(['name', 'version', 'spec']).execute()) {
    add(fromJson<{ layers?: { id: string; checksum: string }[] }>(t.spec).layers, `template ${t.name}@${t.version}`);
  }
  for (const g of await db.selectFrom('groups').select(['id', 'variants']).execute()) {
    for (const v of fromJson<{ id: string; extraLayers?: { id: string; checksum: string }[] }[]>(g.variants))
      add(v.extraLayers, `group ${g.id} variant ${v.id}`);
  }
  for (const i of await db.selectFrom('instances').select(['name', 'container_config']).execute()) {
    add(fromJson<{ layers?: { id: string; checksum: string }[] }>(i.container_config).layers, `instance ${i.name}`);
  }
  return out;
}

function toTemplate(r: Selectable<TemplatesTable>): TemplateVersion {
  return { name: r.name, version: r.version, spec: fromJson(r.spec), specHash: r.spec_hash, createdAt: Number(r.created_at) };
}

export class KyselyTemplateRepository implements TemplateRepository {
  constructor(private readonly ctx: StoreContext) {}

  async create(t: TemplateVersion): Promise<{ template: TemplateVersion; created: boolean }> {
    const inserted = await this.ctx.db
      .insertInto('templates')
      .values({ name: t.name, version: t.version, spec: toJson(t.spec), spec_hash: t.specHash, created_at: t.createdAt })
      .onConflict((oc) => oc.columns(['name', 'version']).doNothing())
      .returningAll()
      .executeTakeFirst();
    if (inserted) return { template: toTemplate(inserted), created: true };
    const existing = await this.get(t.name, t.version);
    if (!existing) throw new AppError('INTERNAL', `template ${t.name}@${t.version} vanished during create`);
    if (existing.specHash !== t.specHash) {
      throw new AppError(
        'IMMUTABLE',
        `template ${t.name} version ${t.version} already exists with a different definition; publish a new version`,
      );
    }
    return { template: existing, created: false };
  }

  async get(name: string, version: string): Promise<TemplateVersion | undefined> {
    const row = await this.ctx.db
      .selectFrom('templates')
      .selectAll()
      .where('name', '=', name)
      .where('version', '=', version)
      .executeTakeFirst();
    return row && toTemplate(row);
  }

  async list(filter: { name?: string } = {}): Promise<TemplateVersion[]> {
    let q = this.ctx.db.selectFrom('templates').selectAll().orderBy('name').orderBy('created_at').orderBy('version');
    if (filter.name !== undefined) q = q.where('name', '=', filter.name);
    return (await q.execute()).map(toTemplate);
  }

  delete(name: string, version: string): Promise<void> {
    return this.ctx.atomic(async (db) => {
      const users: string[] = [];
      for (const g of await db.selectFrom('groups').select(['id', 'variants']).execute()) {
        for (const v of fromJson<{ id: string; template: { name: string; version: string } }[]>(g.variants)) {
          if (v.template.name === name && v.template.version === version) users.push(`group ${g.id} variant ${v.id}`);
        }
      }
      if (users.length > 0) {
        throw new AppError(
          'CONFLICT',
          `template ${name} version ${version} is still used by ${users.slice(0, 5).join(', ')}; point them at another version first`,
          { details: { users } },
        );
      }
      const result = await db.deleteFrom('templates').where('name', '=', name).where('version', '=', version).executeTakeFirst();
      if (Number(result.numDeletedRows) === 0)
        throw new AppError('TEMPLATE_NOT_FOUND', `template ${name} version ${version} does not exist`);
    });
  }
}

function toGroup(r: Selectable<GroupsTable>): Group {
  const scaling = fromJsonOrNull<ScalingPolicy>(r.scaling);
  // Before 0009 the tiers were stored inside the policy, [] when none were given (now: the system's default).
  const legacyTiers = scaling?.idleTiers;
  if (scaling) delete scaling.idleTiers;
  const idleTiers = r.idle_tiers === null ? (legacyTiers?.length ? legacyTiers : undefined) : fromJson<IdleTier[]>(r.idle_tiers);
  return {
    id: r.id,
    kind: r.kind as Group['kind'],
    placement: r.placement as Group['placement'],
    caps: fromJson(r.caps),
    variants: fromJson(r.variants),
    scaling,
    ...(idleTiers ? { idleTiers } : {}),
    ...(r.backup ? { backup: fromJson(r.backup) } : {}),
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/** The parts of a group that define it (timestamps excluded). */
function groupBody(g: Group): string {
  return canonicalJson({
    kind: g.kind,
    placement: g.placement,
    caps: g.caps,
    variants: g.variants,
    scaling: g.scaling,
    idleTiers: g.idleTiers,
    backup: g.backup ?? undefined,
  });
}

export class KyselyGroupRepository implements GroupRepository {
  constructor(private readonly ctx: StoreContext) {}

  put(group: Group): Promise<{ group: Group; created: boolean; changed: boolean }> {
    const columns = {
      kind: group.kind,
      placement: group.placement,
      caps: toJson(group.caps),
      variants: toJson(group.variants),
      scaling: toJsonOrNull(group.scaling),
      idle_tiers: toJsonOrNull(group.idleTiers ?? null),
      backup: toJsonOrNull(group.backup ?? null),
      updated_at: group.updatedAt,
    };
    return this.ctx.atomic(async (db) => {
      const current = await db
        .selectFrom('groups')
        .selectAll()
        .where('id', '=', group.id)
        .$if(this.ctx.dialect === 'postgres', (q) => q.forUpdate())
        .executeTakeFirst();
      if (!current) {
        try {
          const row = await db
            .insertInto('groups')
            .values({ id: group.id, created_at: group.createdAt, ...columns })
            .returningAll()
            .executeTakeFirstOrThrow();
          return { group: toGroup(row), created: true, changed: true };
        } catch (err) {
          if (isUniqueViolation(err)) throw new AppError('CONFLICT', `group ${group.id} was created concurrently; retry`);
          throw err;
        }
      }
      const existing = toGroup(current);
      if (groupBody(existing) === groupBody(group)) return { group: existing, created: false, changed: false };
      const row = await db.updateTable('groups').set(columns).where('id', '=', group.id).returningAll().executeTakeFirstOrThrow();
      return { group: toGroup(row), created: false, changed: true };
    });
  }

  async get(id: string): Promise<Group | undefined> {
    const row = await this.ctx.db.selectFrom('groups').selectAll().where('id', '=', id).executeTakeFirst();
    return row && toGroup(row);
  }

  async list(): Promise<Group[]> {
    return (await this.ctx.db.selectFrom('groups').selectAll().orderBy('id').execute()).map(toGroup);
  }

  delete(id: string): Promise<void> {
    return this.ctx.atomic(async (db) => {
      const used = await db.selectFrom('instances').select('id').where('group_id', '=', id).limit(1).executeTakeFirst();
      if (used) throw new AppError('CONFLICT', `group ${id} still has instances (e.g. ${used.id}); delete them first`);
      const result = await db.deleteFrom('groups').where('id', '=', id).executeTakeFirst();
      if (Number(result.numDeletedRows) === 0) throw new AppError('GROUP_NOT_FOUND', `group ${id} does not exist`);
    });
  }
}
