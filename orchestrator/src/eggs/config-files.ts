// Configuration-file edits of egg templates (`config.files`), pure: the plan
// resolves `{{server.build.default.port}}`, `{{env.X}}`, `{{server.environment.X}}`
// and `{{server.allocations.default.*}}` from the instance, and each parser sets
// the planned keys in a file's text: structured files by path (indexes and
// wildcards, config-paths.ts), value-matching keys only where the value fits.
// The agent reads and writes the files.

import { parseDocument } from 'yaml';
import { parse as parseToml, stringify as stringifyToml } from 'smol-toml';
import type { ConfigFileSpec, ConfigParser } from '../domain/template.js';
import { REFERENCE, resolveReference, type ConfigContext } from './config-references.js';
import { VALUE_MATCHING_PARSERS } from './config-keys.js';
import { expandPath, getAt, matchedValue, parsePath, setAt, type PathSegment } from './config-paths.js';

export type { ConfigContext };
export { unknownReferences } from './config-references.js';

export interface PlannedEdit {
  key: string;
  value: string;
  /** Value matching: only a value equal to this (or matching `regex:RE`) is replaced. */
  ifValue?: string;
}
export interface ConfigEditPlan {
  path: string;
  parser: ConfigParser;
  edits: PlannedEdit[];
}

/** Every file's edits with their references filled in; throws on a reference it cannot resolve (refused at import). */
export function planConfigEdits(files: readonly ConfigFileSpec[], ctx: ConfigContext): ConfigEditPlan[] {
  return files.map((f) => {
    const fill = (key: string, raw: string): string =>
      raw.replace(REFERENCE, (all, ref: string) => {
        const v = resolveReference(ref, ctx);
        if (v === undefined) throw new Error(`${f.path}: ${key} refers to ${all}, which names nothing an instance has`);
        return v;
      });
    const edits: PlannedEdit[] = [];
    for (const [key, raw] of Object.entries(f.find)) {
      if (typeof raw === 'string') edits.push({ key, value: fill(key, raw) });
      else for (const [ifValue, replacement] of Object.entries(raw)) edits.push({ key, value: fill(key, replacement), ifValue });
    }
    return { path: f.path, parser: f.parser, edits };
  });
}

/** The file's new text after the edits (`text` is '' for a file that does not exist yet). */
export function applyConfigEdits(parser: ConfigParser, text: string, edits: readonly PlannedEdit[]): string {
  const unmatched = edits.find((e) => e.ifValue !== undefined && !VALUE_MATCHING_PARSERS.includes(parser));
  if (unmatched)
    throw new Error(`${unmatched.key}: value matching does not work with the ${parser} parser (only ${VALUE_MATCHING_PARSERS.join(', ')})`);
  switch (parser) {
    case 'properties':
      return editLines(
        text,
        edits,
        (key) => new RegExp(`^\\s*${escape(key)}\\s*[=:]\\s*(.*)$`),
        (e) => `${e.key}=${e.value}`,
      );
    case 'file':
      return editLines(
        text,
        edits,
        (key) => new RegExp(`^${escape(key)}`),
        (e) => e.value,
        true,
      );
    case 'ini':
      return editIni(text, edits);
    case 'yaml':
      return editYaml(text, edits);
    case 'json':
      return editJson(text, edits);
    case 'toml':
      return editToml(text, edits);
    case 'xml':
      return editXml(text, edits);
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

/** Line-based files: each matching line replaced, a missing key appended (`file` replaces whole lines, appends nothing; a value-matching key only rewrites a line whose value fits). */
function editLines(
  text: string,
  edits: readonly PlannedEdit[],
  match: (key: string) => RegExp,
  line: (e: PlannedEdit) => string,
  replaceOnly = false,
): string {
  const lines = text.length === 0 ? [] : text.replace(/\n$/, '').split('\n');
  for (const e of edits) {
    const re = match(e.key);
    let found = false;
    for (let i = 0; i < lines.length; i++) {
      const m = re.exec(lines[i] as string);
      if (!m) continue;
      found = true;
      if (e.ifValue === undefined) lines[i] = line(e);
      else {
        const value = matchedValue((m[1] ?? '').trimEnd(), e.ifValue, e.value);
        if (value !== undefined) lines[i] = line({ ...e, value });
      }
    }
    if (!found && !replaceOnly && e.ifValue === undefined) lines.push(line(e));
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
      if (e.ifValue !== undefined) continue;
      lines.push(`[${section}]`, `${name}=${e.value}`);
      continue;
    }
    const from = header + 1;
    const next = lines.findIndex((l, i) => i >= from && isHeader(l));
    const to = next < 0 ? lines.length : next;
    const keyLine = new RegExp(`^\\s*${escape(name)}\\s*=\\s*(.*)$`);
    const at = lines.findIndex((l, i) => i >= from && i < to && keyLine.test(l));
    if (e.ifValue !== undefined) {
      const value = at < 0 ? undefined : matchedValue((keyLine.exec(lines[at] as string)?.[1] ?? '').trimEnd(), e.ifValue, e.value);
      if (value !== undefined) lines[at] = `${name}=${value}`;
    } else if (at >= 0) lines[at] = `${name}=${e.value}`;
    else lines.splice(to, 0, `${name}=${e.value}`);
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/**
 * The concrete sets of one edit on a document (its plain JS view): the path's
 * wildcards and indexes expanded, value-matching edits kept only where the
 * value there fits.
 */
function structuredSets(view: unknown, e: PlannedEdit): { path: PathSegment[]; value: unknown }[] {
  const paths = expandPath(view, parsePath(e.key), e.key);
  const out: { path: PathSegment[]; value: unknown }[] = [];
  for (const path of paths) {
    if (e.ifValue === undefined) out.push({ path, value: typed(e.value) });
    else {
      const value = matchedValue(getAt(view, path), e.ifValue, e.value);
      if (value !== undefined) out.push({ path, value: typed(value) });
    }
  }
  return out;
}

function editYaml(text: string, edits: readonly PlannedEdit[]): string {
  const doc = parseDocument(text);
  if (doc.errors.length > 0) throw new Error(`not valid YAML: ${doc.errors[0]?.message ?? 'parse error'}`);
  const view = doc.toJS() as unknown;
  if (view !== null && view !== undefined && (typeof view !== 'object' || Array.isArray(view)))
    throw new Error('not a YAML map at the top');
  // Setting on the document keeps comments and layout; the JS view is read again after each edit.
  for (const e of edits) for (const s of structuredSets(doc.toJS(), e)) doc.setIn(s.path, s.value);
  return doc.toString();
}

type JsonTree = Record<string, unknown>;

function editTree(root: JsonTree, edits: readonly PlannedEdit[]): void {
  for (const e of edits) for (const s of structuredSets(root, e)) setAt(root, s.path, s.value);
}

function editJson(text: string, edits: readonly PlannedEdit[]): string {
  const root = (text.trim() === '' ? {} : JSON.parse(text)) as unknown;
  if (typeof root !== 'object' || root === null || Array.isArray(root)) throw new Error('not a JSON object');
  editTree(root as JsonTree, edits);
  return `${JSON.stringify(root, null, 2)}\n`;
}

function editToml(text: string, edits: readonly PlannedEdit[]): string {
  const root = parseToml(text) as JsonTree;
  editTree(root, edits);
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
