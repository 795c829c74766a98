// What the orchestrator would refuse in an apply file, found before any write
// (pure): the server's own schemas and catalog rules (contracts/), each refusal
// naming file, object and field, e.g.
// `examples/network.yml: templates[minecraft@1.0.0].spec.resources.memoryMb: must be an integer number of MiB (got "2G")`.

import { GroupBody, TemplateBody, bodyProblems } from '../contracts/catalog.js';
import { normalizeGroup, normalizeTemplate } from '../contracts/catalog-rules.js';
import { isAppError } from '../shared/errors.js';
import type { ApplyDocument, Json, JsonMap } from './apply-file.js';

/** `body/variables/0/default` → `variables[0].default`. */
function dottedField(path: string): string {
  return path
    .split('/')
    .filter(Boolean)
    .map((p) => (/^\d+$/.test(p) ? `[${p}]` : `.${p}`))
    .join('')
    .replace(/^\./, '');
}

/** A catalog-rules refusal as `field: message` (its message starts with `body/FIELD ` or `FIELD: `). */
function ruleProblem(err: unknown): { field: string; message: string } | undefined {
  if (!isAppError(err)) return undefined;
  const body = /^body\/(\S+?):? (.*)$/s.exec(err.message);
  if (body) return { field: dottedField(body[1]!), message: body[2]! };
  const dotted = /^([A-Za-z][\w.[\]]*): (.*)$/s.exec(err.message);
  if (dotted) return { field: dotted[1]!, message: dotted[2]! };
  return { field: '', message: err.message };
}

/**
 * The line for a server refusal of one object's validate-only PUT: its message
 * (`body/layers/0: layer … was never uploaded`) placed under file and object.
 */
export function serverRefusalLine(file: string, kind: 'template' | 'group', key: string, code: string, message: string): string {
  const object = kind === 'template' ? `templates[${key}]` : `groups[${key}]`;
  const prefix = kind === 'template' ? 'spec.' : '';
  const body = /^body\/(\S+?):? (.*)$/s.exec(message);
  if (body) return line(file, object, `${prefix}${dottedField(body[1]!)}`, `${body[2]!} (${code})`);
  return line(file, object, '', `${message} (${code})`);
}

function line(file: string, object: string, field: string, message: string): string {
  return `${file}: ${object}${field ? `.${field}` : ''}: ${message}`;
}

/** Every refusal, one line each; empty when the server would accept each body on its own. */
export function checkApplyDocument(doc: ApplyDocument, file: string): string[] {
  const out: string[] = [];
  const check = (object: string, schema: typeof TemplateBody | typeof GroupBody, body: JsonMap, normalize: () => unknown, prefix = '') => {
    const structural = bodyProblems(schema, body);
    for (const p of structural) out.push(line(file, object, `${prefix}${p.field}`, p.message));
    if (structural.length > 0) return;
    try {
      normalize();
    } catch (err) {
      const p = ruleProblem(err);
      if (!p) throw err;
      out.push(line(file, object, p.field ? `${prefix}${p.field}` : prefix.replace(/\.$/, ''), p.message));
    }
  };
  for (const t of doc.templates) {
    check(`templates[${t.name}@${t.version}]`, TemplateBody, t.spec, () => normalizeTemplate(t.spec as never), 'spec.');
  }
  for (const g of doc.groups) {
    check(`groups[${g.id}]`, GroupBody, g.body, () => normalizeGroup(g.body as never));
  }
  return out;
}

function valueAt(v: Json | undefined, path: string): Json | undefined {
  let at: Json | undefined = v;
  for (const part of path.split(/\.|\[(\d+)\]/).filter((p) => p !== undefined && p !== '')) {
    if (at === null || typeof at !== 'object') return undefined;
    at = Array.isArray(at) ? at[Number(part)] : at[part];
  }
  return at;
}

const shown = (v: Json | undefined): string => (v === undefined ? '(not set)' : JSON.stringify(v));

/** The lines of a refused immutable version: each changed field with the stored and the file's value. */
export function describeConflict(key: string, stored: JsonMap, desired: JsonMap, changes: readonly string[]): string[] {
  const at = key.lastIndexOf('@');
  const lines = changes
    .slice(0, 20)
    .map((c) => `  ${c}: ${shown(valueAt(stored, c))} on the orchestrator, ${shown(valueAt(desired, c))} in the file`);
  if (changes.length > 20) lines.push(`  … and ${changes.length - 20} more`);
  lines.push(
    `  template versions are immutable: bump the version of ${key.slice(0, at)} (e.g. ${key.slice(at + 1)} → a new version) and point the groups at it`,
  );
  return [`template ${key} already exists with a different body:`, ...lines];
}

/** What exists for an apply run to refer to: template versions (`name@version`) and layers (`id@checksum`). */
export interface Available {
  templates: ReadonlySet<string>;
  layers: ReadonlySet<string>;
}

export interface Dependencies {
  /** A group's template version neither in the file nor on the orchestrator (usage errors). */
  missingTemplates: string[];
  /** A layer checksum neither uploaded nor in the file's `layers:` section. */
  missingLayers: string[];
  /** `template:KEY` / `group:KEY` of objects that need something only this file brings (no server dry-run for them). */
  needsFile: Set<string>;
}

/**
 * Checks every reference of the file against what the orchestrator holds
 * (its list answers) and what the file itself brings, before any write; the
 * server's validate-only check is then asked only of objects whose references
 * all exist already, so it never answers "not found" for them.
 */
export function checkDependencies(doc: ApplyDocument, file: string, onServer: Available, inFile: Available): Dependencies {
  const out: Dependencies = { missingTemplates: [], missingLayers: [], needsFile: new Set() };
  const layer = (ref: { id: string; checksum?: string }, owner: string, object: string, field: string) => {
    const key = `${ref.id}@${ref.checksum ?? ''}`;
    if (onServer.layers.has(key)) return;
    if (inFile.layers.has(key)) out.needsFile.add(owner);
    else
      out.missingLayers.push(
        line(
          file,
          object,
          field,
          `layer ${ref.id}@${ref.checksum ?? '?'} was never uploaded and is not in the file's layers: section (LAYER_NOT_FOUND)`,
        ),
      );
  };
  for (const t of doc.templates) {
    const key = `${t.name}@${t.version}`;
    ((t.spec.layers ?? []) as unknown as { id: string; checksum?: string }[]).forEach((r, i) =>
      layer(r, `template:${key}`, `templates[${key}]`, `spec.layers[${i}]`),
    );
  }
  for (const g of doc.groups) {
    (g.body.variants as JsonMap[]).forEach((v, i) => {
      const t = v.template as { name: string; version: string };
      const key = `${t.name}@${t.version}`;
      if (onServer.templates.has(key)) {
        // present already: the server's own check can run
      } else if (inFile.templates.has(key)) out.needsFile.add(`group:${g.id}`);
      else out.missingTemplates.push(`group ${g.id} uses template ${key}, which is neither in the file nor on the orchestrator`);
      (v.extraLayers as unknown as { id: string; checksum?: string }[]).forEach((r, j) =>
        layer(r, `group:${g.id}`, `groups[${g.id}]`, `variants[${i}].extraLayers[${j}]`),
      );
    });
  }
  return out;
}
