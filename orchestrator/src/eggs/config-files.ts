// Configuration-file edits of egg templates (`config.files`), pure: the plan
// resolves `{{server.build.default.port}}`, `{{env.X}}` and
// `{{server.allocations.default.*}}` from the instance, and each parser sets
// the planned keys in a file's text. The agent reads and writes the files.

import { parseDocument } from 'yaml';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import type { ConfigFileSpec, ConfigParser } from '../domain/template.js';
import { REFERENCE, resolveReference, type ConfigContext } from './config-references.js';

export type { ConfigContext };
export { unknownReferences } from './config-references.js';

export interface PlannedEdit {
  key: string;
  value: string;
}
export interface ConfigEditPlan {
  path: string;
  parser: ConfigParser;
  edits: PlannedEdit[];
}

/** Every file's edits with their references filled in; throws on a reference it cannot resolve (refused at import). */
export function planConfigEdits(files: readonly ConfigFileSpec[], ctx: ConfigContext): ConfigEditPlan[] {
  return files.map((f) => ({
    path: f.path,
    parser: f.parser,
    edits: Object.entries(f.find).map(([key, raw]) => ({
      key,
      value: raw.replace(REFERENCE, (all, ref: string) => {
        const v = resolveReference(ref, ctx);
        if (v === undefined) throw new Error(`${f.path}: ${key} refers to ${all}, which names nothing an instance has`);
        return v;
      }),
    })),
  }));
}

/** The file's new text after the edits (`text` is '' for a file that does not exist yet). */
export function applyConfigEdits(parser: ConfigParser, text: string, edits: readonly PlannedEdit[]): string {
  switch (parser) {
    case 'properties': return editLines(text, edits, (key) => new RegExp(`^\\s*${escape(key)}\\s*[=:]`), (e) => `${e.key}=${e.value}`);
    case 'file': return editLines(text, edits, (key) => new RegExp(`^${escape(key)}`), (e) => e.value, true);
    case 'ini': return editIni(text, edits);
    case 'yaml': return editYaml(text, edits);
    case 'json': return editJson(text, edits);
    case 'toml': return editToml(text, edits);
    case 'xml': return editXml(text, edits);
  }
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Egg values are text; structured files get the JSON type the text spells (`25565` → number, `true` → boolean). */
function typed(value: string): string | number | boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  if (/^-?(0|[1-9]\d{0,14})(\.\d+)?$/.test(value)) return Number(value);
  return value;
}

/** Line-based files: each matching line replaced, a missing key appended (`file` replaces whole lines, appends nothing). */
function editLines(text: string, edits: readonly PlannedEdit[], match: (key: string) => RegExp, line: (e: PlannedEdit) => string, replaceOnly = false): string {
  const lines = text.length === 0 ? [] : text.replace(/\n$/, '').split('\n');
  for (const e of edits) {
    const re = match(e.key);
    let found = false;
    for (let i = 0; i < lines.length; i++) {
      if (re.test(lines[i] as string)) {
        lines[i] = line(e);
        found = true;
      }
    }
    if (!found && !replaceOnly) lines.push(line(e));
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

function editIni(text: string, edits: readonly PlannedEdit[]): string {
  const lines = text.length === 0 ? [] : text.replace(/\n$/, '').split('\n');
  const isHeader = (l: string) => /^\s*\[[^\]]+\]\s*$/.test(l);
  for (const e of edits) {
    const dot = e.key.indexOf('.');
    const section = dot < 0 ? '' : e.key.slice(0, dot);
    const name = dot < 0 ? e.key : e.key.slice(dot + 1);
    const header = section === '' ? -1 : lines.findIndex((l) => isHeader(l) && l.trim().slice(1, -1).trim() === section);
    if (section !== '' && header < 0) {
      lines.push(`[${section}]`, `${name}=${e.value}`);
      continue;
    }
    const from = header + 1;
    const next = lines.findIndex((l, i) => i >= from && isHeader(l));
    const to = next < 0 ? lines.length : next;
    const at = lines.findIndex((l, i) => i >= from && i < to && new RegExp(`^\\s*${escape(name)}\\s*=`).test(l));
    if (at >= 0) lines[at] = `${name}=${e.value}`;
    else lines.splice(to, 0, `${name}=${e.value}`);
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

function editYaml(text: string, edits: readonly PlannedEdit[]): string {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`not valid YAML: ${doc.errors[0]?.message ?? 'parse error'}`);
  for (const e of edits) doc.setIn(e.key.split('.'), typed(e.value));
  return doc.toString();
}

type JsonTree = { [k: string]: unknown };

function setPath(root: JsonTree, key: string, value: unknown): void {
  const parts = key.split('.');
  let node = root;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null || Array.isArray(next)) node[part] = {};
    node = node[part] as JsonTree;
  }
  node[parts[parts.length - 1] as string] = value;
}

function editJson(text: string, edits: readonly PlannedEdit[]): string {
  const root = (text.trim() === '' ? {} : JSON.parse(text)) as unknown;
  if (typeof root !== 'object' || root === null || Array.isArray(root)) throw new Error('not a JSON object');
  for (const e of edits) setPath(root as JsonTree, e.key, typed(e.value));
  return `${JSON.stringify(root, null, 2)}\n`;
}

function editToml(text: string, edits: readonly PlannedEdit[]): string {
  const root = parseToml(text) as JsonTree;
  for (const e of edits) setPath(root, e.key, typed(e.value));
  return stringifyToml(root);
}

function xmlEscape(v: string): string {
  return v.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** Sets the text of the element at a dotted path (`root.child.leaf`); creates the leaf under an existing parent. */
function editXml(text: string, edits: readonly PlannedEdit[]): string {
  let out = text;
  for (const e of edits) {
    const parts = e.key.split('.');
    let start = 0;
    let end = out.length;
    for (const [i, tag] of parts.entries()) {
      const open = new RegExp(`<${escape(tag)}(\\s[^>]*)?>`, 'g');
      open.lastIndex = start;
      const m = open.exec(out);
      const close = m ? out.indexOf(`</${tag}>`, m.index + m[0].length) : -1;
      if (!m || m.index >= end || close < 0 || close > end) {
        if (i === 0 || i < parts.length - 1) throw new Error(`${e.key}: no element <${tag}> to edit`);
        out = `${out.slice(0, end)}<${tag}>${xmlEscape(e.value)}</${tag}>${out.slice(end)}`;
        break;
      }
      start = m.index + m[0].length;
      end = close;
      if (i === parts.length - 1) out = `${out.slice(0, start)}${xmlEscape(e.value)}${out.slice(end)}`;
    }
  }
  return out;
}
