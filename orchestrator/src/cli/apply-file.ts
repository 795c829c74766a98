// Parses and checks the declarative file of `ectl apply -f` (pure). The format
// is documented in docs/cli.md; the server validates each body in depth, this
// module only catches shape mistakes early with the path of the bad field.

import { parseDocument } from 'yaml';
import { RESOURCE_ID_PATTERN, SHA256_PATTERN } from '../shared/ids.js';
import { CliError } from './errors.js';

export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
export type JsonMap = { [key: string]: Json };

export interface LayerRefSpec {
  id: string;
  /** Absent: resolved to the newest pushed checksum of `id` before planning. */
  checksum?: string;
}

export interface TemplateDoc {
  name: string;
  version: string;
  spec: JsonMap;
}

export interface GroupDoc {
  id: string;
  /** The PUT /groups/:id body (everything but the id). */
  body: JsonMap;
}

/** One entry of the file's `layers:` section: a layer id and its directory, as written (relative to the file). */
export interface LayerSourceDoc {
  id: string;
  dir: string;
}

export interface ApplyDocument {
  /** Layers apply pushes before the templates and groups (absent = none). */
  layers?: LayerSourceDoc[];
  templates: TemplateDoc[];
  groups: GroupDoc[];
}

const TOP_KEYS = new Set(['apiVersion', 'layers', 'templates', 'groups']);
const TEMPLATE_KEYS = new Set(['name', 'version', 'spec']);
const GROUP_KEYS = new Set(['id', 'kind', 'placement', 'caps', 'scaling', 'backup', 'variants']);
const VARIANT_KEYS = new Set(['id', 'template', 'extraLayers', 'resources', 'env']);

function fail(path: string, problem: string): never {
  throw new CliError('usage', `${path}: ${problem}`);
}

function isMap(v: unknown): v is JsonMap {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function map(v: unknown, path: string): JsonMap {
  if (!isMap(v)) fail(path, 'must be a mapping');
  return v;
}

function list(v: unknown, path: string): Json[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail(path, 'must be a list');
  return v as Json[];
}

function onlyKeys(m: JsonMap, allowed: Set<string>, path: string): void {
  for (const k of Object.keys(m))
    if (!allowed.has(k)) fail(`${path}.${k}`, `is not a known field (expected one of ${[...allowed].join(', ')})`);
}

function id(v: unknown, path: string): string {
  if (typeof v !== 'string' || !RESOURCE_ID_PATTERN.test(v) || v.length > 128) {
    fail(path, `must be an id of letters, digits, '_', '.', '-' (got ${JSON.stringify(v)})`);
  }
  return v;
}

/** Versions must be strings in YAML: an unquoted 1.10 would silently become 1.1. */
function version(v: unknown, path: string): string {
  if (typeof v !== 'string') fail(path, `must be a quoted string (got ${JSON.stringify(v)}; write "${String(v)}")`);
  return id(v, path);
}

/** Env maps hold strings; YAML scalars (true, 25565) are turned into their text. */
function envMap(v: unknown, path: string): JsonMap {
  if (v === undefined || v === null) return {};
  const m = map(v, path);
  const out: JsonMap = {};
  for (const [k, val] of Object.entries(m)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) fail(`${path}.${k}`, 'is not a valid environment variable name');
    if (val === null || typeof val === 'object') fail(`${path}.${k}`, 'must be a string, number or boolean');
    out[k] = String(val);
  }
  return out;
}

/** `id`, `id@checksum` or `{id, checksum}`. */
export function layerRef(v: unknown, path: string): LayerRefSpec {
  let ref: LayerRefSpec;
  if (typeof v === 'string') {
    const [lid, checksum] = v.split('@', 2);
    ref = checksum === undefined ? { id: lid! } : { id: lid!, checksum };
  } else {
    const m = map(v, path);
    onlyKeys(m, new Set(['id', 'checksum']), path);
    ref = m.checksum === undefined ? { id: m.id as string } : { id: m.id as string, checksum: m.checksum as string };
  }
  id(ref.id, `${path}.id`);
  if (ref.checksum !== undefined && (typeof ref.checksum !== 'string' || !SHA256_PATTERN.test(ref.checksum))) {
    fail(`${path}.checksum`, 'must be a lowercase hex SHA-256 (or leave it out to use the newest pushed checksum)');
  }
  return ref;
}

function layerList(v: unknown, path: string): Json[] {
  return list(v, path).map((l, i) => layerRef(l, `${path}[${i}]`) as unknown as Json);
}

function templateDoc(v: unknown, path: string): TemplateDoc {
  const m = map(v, path);
  onlyKeys(m, TEMPLATE_KEYS, path);
  const spec = { ...map(m.spec, `${path}.spec`) };
  if (spec.env !== undefined) spec.env = envMap(spec.env, `${path}.spec.env`);
  if (spec.layers !== undefined) spec.layers = layerList(spec.layers, `${path}.spec.layers`);
  return { name: id(m.name, `${path}.name`), version: version(m.version, `${path}.version`), spec };
}

/** `name@version` or `{name, version}`. */
function templateRef(v: unknown, path: string): JsonMap {
  if (typeof v === 'string') {
    const at = v.lastIndexOf('@');
    if (at <= 0) fail(path, `must be name@version or {name, version} (got ${JSON.stringify(v)})`);
    return { name: id(v.slice(0, at), path), version: id(v.slice(at + 1), path) };
  }
  const m = map(v, path);
  onlyKeys(m, new Set(['name', 'version']), path);
  return { name: id(m.name, `${path}.name`), version: version(m.version, `${path}.version`) };
}

function variantDoc(v: unknown, path: string): JsonMap {
  const m = map(v, path);
  onlyKeys(m, VARIANT_KEYS, path);
  const out: JsonMap = {
    id: id(m.id, `${path}.id`),
    template: templateRef(m.template, `${path}.template`),
    extraLayers: layerList(m.extraLayers, `${path}.extraLayers`),
    env: envMap(m.env, `${path}.env`),
  };
  if (m.resources !== undefined) out.resources = map(m.resources, `${path}.resources`);
  return out;
}

function groupDoc(v: unknown, path: string): GroupDoc {
  const m = map(v, path);
  onlyKeys(m, GROUP_KEYS, path);
  const gid = id(m.id, `${path}.id`);
  if (m.kind !== 'persistent' && m.kind !== 'ephemeral') fail(`${path}.kind`, 'must be persistent or ephemeral');
  if (m.placement !== undefined && m.placement !== 'packed' && m.placement !== 'distributed')
    fail(`${path}.placement`, 'must be packed or distributed');
  const variants = list(m.variants, `${path}.variants`).map((x, i) => variantDoc(x, `${path}.variants[${i}]`));
  if (variants.length === 0) fail(`${path}.variants`, 'needs at least one variant');
  unique(
    variants.map((x) => x.id as string),
    `${path}.variants`,
    'variant id',
  );
  const body: JsonMap = {
    kind: m.kind,
    placement: m.placement ?? 'packed',
    caps: m.caps === undefined ? {} : map(m.caps, `${path}.caps`),
    variants,
  };
  if (m.scaling !== undefined) body.scaling = m.scaling === null ? null : map(m.scaling, `${path}.scaling`);
  if (m.backup !== undefined) body.backup = m.backup === null ? null : map(m.backup, `${path}.backup`);
  return { id: gid, body };
}

/** `layers: { lobby-config: layers/lobby }`: layer id → directory relative to the file. */
function layerSources(v: unknown, path: string): LayerSourceDoc[] {
  if (v === undefined || v === null) return [];
  const m = map(v, path);
  return Object.entries(m).map(([lid, dir]) => {
    id(lid, `${path}.${lid}`);
    if (typeof dir !== 'string' || dir.trim() === '')
      fail(`${path}.${lid}`, `must be the layer's directory, relative to the file (got ${JSON.stringify(dir)})`);
    return { id: lid, dir };
  });
}

function unique(keys: string[], path: string, what: string): void {
  const seen = new Set<string>();
  for (const k of keys) {
    if (seen.has(k)) fail(path, `${what} "${k}" appears twice`);
    seen.add(k);
  }
}

/** Parses the YAML text of an apply file; throws CliError('usage') naming the file position or field. */
export function parseApplyFile(text: string, fileName = 'file'): ApplyDocument {
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) throw new CliError('usage', `${fileName}: ${doc.errors[0]!.message.split('\n')[0]}`);
  const root = doc.toJS({ maxAliasCount: 100 }) as unknown;
  if (root === null || root === undefined) throw new CliError('usage', `${fileName}: the file is empty`);
  const m = map(root, fileName);
  onlyKeys(m, TOP_KEYS, fileName);
  if (m.apiVersion !== undefined && m.apiVersion !== 'endercloud/v1') fail(`${fileName}.apiVersion`, 'must be endercloud/v1');
  const layers = layerSources(m.layers, 'layers');
  const templates = list(m.templates, `${fileName}.templates`).map((t, i) => templateDoc(t, `templates[${i}]`));
  const groups = list(m.groups, `${fileName}.groups`).map((g, i) => groupDoc(g, `groups[${i}]`));
  unique(
    templates.map((t) => `${t.name}@${t.version}`),
    'templates',
    'template',
  );
  unique(
    groups.map((g) => g.id),
    'groups',
    'group',
  );
  if (layers.length === 0 && templates.length === 0 && groups.length === 0)
    throw new CliError('usage', `${fileName}: holds no layers, templates or groups`);
  return layers.length > 0 ? { layers, templates, groups } : { templates, groups };
}

/**
 * Returns a copy with every checksum-less layer ref filled from `newest` (layer
 * id → checksum): the file's own `layers:` checksums, else the newest pushed.
 */
export function resolveLayers(doc: ApplyDocument, newest: ReadonlyMap<string, string>): ApplyDocument {
  const fill = (refs: Json | undefined, path: string): Json[] =>
    ((refs ?? []) as unknown as LayerRefSpec[]).map((r) => {
      if (r.checksum !== undefined) return { id: r.id, checksum: r.checksum };
      const checksum = newest.get(r.id);
      if (!checksum)
        fail(
          path,
          `layer "${r.id}" has never been pushed (name its directory in the file's layers: section, or ectl layers push ${r.id} DIR)`,
        );
      return { id: r.id, checksum };
    });
  return {
    ...(doc.layers ? { layers: doc.layers } : {}),
    templates: doc.templates.map((t) => ({
      ...t,
      spec: t.spec.layers === undefined ? t.spec : { ...t.spec, layers: fill(t.spec.layers, `template ${t.name}@${t.version} layers`) },
    })),
    groups: doc.groups.map((g) => ({
      id: g.id,
      body: {
        ...g.body,
        variants: (g.body.variants as JsonMap[]).map((v) => ({
          ...v,
          extraLayers: fill(v.extraLayers, `group ${g.id} variant ${String(v.id)} extraLayers`),
        })),
      },
    })),
  };
}
