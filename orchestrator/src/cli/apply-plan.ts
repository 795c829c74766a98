// The preview of `ectl apply` (pure): compares the desired layers, templates and
// groups with what the orchestrator holds and says, per object, push (a layer
// checksum not uploaded yet) / create / unchanged / update (groups) / conflict
// (an immutable template version with another body).

import type { ApplyDocument, Json, JsonMap } from './apply-file.js';

export type PlanAction = 'push' | 'create' | 'unchanged' | 'update' | 'conflict';

export interface PlanItem {
  kind: 'layer' | 'template' | 'group';
  /** The layer id, `name@version` for templates, the id for groups. */
  key: string;
  action: PlanAction;
  /** Paths that differ (update, conflict). */
  changes: string[];
  /** The body to PUT (create, update); a layer's `{checksum, dir}`. */
  body: JsonMap;
}

/**
 * What the orchestrator holds: template specs by `name@version`, group bodies
 * by id (absent = none), uploaded layers as `id@checksum`.
 */
export interface CurrentState {
  templates: ReadonlyMap<string, JsonMap | undefined>;
  groups: ReadonlyMap<string, JsonMap | undefined>;
  layers?: ReadonlySet<string>;
}

/** A layer of the file's `layers:` section with the checksum of its directory (computed by ectl). */
export interface LocalLayer {
  id: string;
  dir: string;
  checksum: string;
}

/** Fields the server sets itself; never part of a comparison. */
const SERVER_FIELDS = new Set(['id', 'createdAt', 'updatedAt', 'specHash']);

function isMap(v: unknown): v is JsonMap {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** An absent key and an empty value (null, {}, []) mean the same: no setting. */
function isEmpty(v: Json | undefined): boolean {
  return v === undefined || v === null || (Array.isArray(v) && v.length === 0) || (isMap(v) && Object.keys(v).length === 0);
}

/** The paths at which `desired` and `current` differ, e.g. `variants[0].env.MOTD`. */
export function diffPaths(desired: Json | undefined, current: Json | undefined, path = '', top = true): string[] {
  if (isEmpty(desired) && isEmpty(current)) return [];
  if (isMap(desired) && isMap(current)) {
    const keys = new Set([...Object.keys(desired), ...Object.keys(current)]);
    const out: string[] = [];
    for (const k of [...keys].sort()) {
      if (top && SERVER_FIELDS.has(k)) continue;
      out.push(...diffPaths(desired[k], current[k], path ? `${path}.${k}` : k, false));
    }
    return out;
  }
  if (Array.isArray(desired) && Array.isArray(current)) {
    if (desired.length !== current.length) return [path || '(root)'];
    return desired.flatMap((d, i) => diffPaths(d, current[i], `${path}[${i}]`, false));
  }
  return desired === current ? [] : [path || '(root)'];
}

function variantsOf(body: JsonMap | undefined): JsonMap[] {
  return Array.isArray(body?.variants) ? (body.variants as JsonMap[]) : [];
}

/** Compares variants by id, so reordering alone is not a change. */
function groupChanges(desired: JsonMap, current: JsonMap): string[] {
  const { variants: _dv, ...dRest } = desired;
  const { variants: _cv, ...cRest } = current;
  const changes = diffPaths(dRest, cRest);
  const currentById = new Map(variantsOf(current).map((v) => [String(v.id), v]));
  for (const v of variantsOf(desired)) {
    const cur = currentById.get(String(v.id));
    if (!cur) changes.push(`variants.${String(v.id)} (new)`);
    else changes.push(...diffPaths(v, cur, `variants.${String(v.id)}`, false));
    currentById.delete(String(v.id));
  }
  for (const gone of currentById.keys()) changes.push(`variants.${gone} (removed)`);
  return changes;
}

/**
 * Turns a body into what the server would store (defaults filled), so omitted
 * defaults never read as changes. ectl passes the server's own pure normalizers.
 */
export interface Normalizers {
  template(spec: JsonMap): JsonMap;
  group(body: JsonMap): JsonMap;
}

export const identityNormalizers: Normalizers = { template: (s) => s, group: (b) => b };

export function planApply(
  doc: ApplyDocument,
  current: CurrentState,
  normalize: Normalizers = identityNormalizers,
  layers: readonly LocalLayer[] = [],
): PlanItem[] {
  const items: PlanItem[] = [];
  for (const l of layers) {
    // Content-addressed: the same checksum already uploaded is nothing to do.
    const present = current.layers?.has(`${l.id}@${l.checksum}`) === true;
    items.push({
      kind: 'layer',
      key: l.id,
      action: present ? 'unchanged' : 'push',
      changes: [],
      body: { checksum: l.checksum, dir: l.dir },
    });
  }
  for (const t of doc.templates) {
    const key = `${t.name}@${t.version}`;
    // Normalized for every item, so a body the rules reject stops the run before any write.
    const normalized = normalize.template(t.spec);
    const existing = current.templates.get(key);
    if (!existing) {
      items.push({ kind: 'template', key, action: 'create', changes: [], body: t.spec });
      continue;
    }
    const changes = diffPaths(normalized, existing);
    items.push({ kind: 'template', key, action: changes.length ? 'conflict' : 'unchanged', changes, body: t.spec });
  }
  for (const g of doc.groups) {
    const normalized = normalize.group(g.body);
    const existing = current.groups.get(g.id);
    if (!existing) {
      items.push({ kind: 'group', key: g.id, action: 'create', changes: [], body: g.body });
      continue;
    }
    const changes = groupChanges(normalized, existing);
    items.push({ kind: 'group', key: g.id, action: changes.length ? 'update' : 'unchanged', changes, body: g.body });
  }
  return items;
}

/** Items to write, in dependency order: layers, then templates, then the groups that use them. */
export function writesOf(plan: readonly PlanItem[]): PlanItem[] {
  const writes = plan.filter((i) => i.action === 'push' || i.action === 'create' || i.action === 'update');
  return (['layer', 'template', 'group'] as const).flatMap((kind) => writes.filter((i) => i.kind === kind));
}

export function planCounts(plan: readonly PlanItem[]): Record<PlanAction, number> {
  const counts: Record<PlanAction, number> = { push: 0, create: 0, unchanged: 0, update: 0, conflict: 0 };
  for (const i of plan) counts[i.action]++;
  return counts;
}

const SYMBOL: Record<PlanAction, string> = { push: '+', create: '+', update: '~', unchanged: '=', conflict: '!' };

/** Human preview: one line per object, changed paths indented under it, a summary line. */
export function formatPlan(plan: readonly PlanItem[]): string {
  const width = Math.max(0, ...plan.map((i) => `${i.kind} ${i.key}`.length));
  const lines: string[] = [];
  for (const i of plan) {
    const from = i.kind === 'layer' ? `  ${String(i.body.dir)} (${String(i.body.checksum).slice(0, 12)})` : '';
    lines.push(`${SYMBOL[i.action]} ${`${i.kind} ${i.key}`.padEnd(width)}  ${i.action}${from}`);
    const shown = i.changes.slice(0, 10);
    for (const c of shown) lines.push(`      ${c}`);
    if (i.changes.length > shown.length) lines.push(`      … and ${i.changes.length - shown.length} more`);
  }
  const c = planCounts(plan);
  const pushes = plan.some((i) => i.kind === 'layer') ? `${c.push} layer(s) to push, ` : '';
  lines.push(`${pushes}${c.create} to create, ${c.update} to update, ${c.unchanged} unchanged, ${c.conflict} in conflict`);
  return `${lines.join('\n')}\n`;
}
