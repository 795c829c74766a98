// Paths of structured config-file edits (yaml, json, toml), pure: the dotted
// keys eggs use, with array indexes (`listeners[0].host`) and wildcards
// (`servers.*.address`), turned into the concrete paths of one document, and
// value matching (`{"regex:^127\\.0\\.0\\.1(:\\d+)?$": "0.0.0.0$1"}`) decided
// on the value that is there. Wings is the yardstick for what each means.

export type PathSegment = string | number;
/** `*` in a parsed path: every child of the map or list at that point. */
export const WILDCARD = Symbol('wildcard');
export type PatternSegment = PathSegment | typeof WILDCARD;

/** `a.b[0][1].*.c` → ['a', 'b', 0, 1, WILDCARD, 'c']; throws on an empty segment or a broken index. */
export function parsePath(key: string): PatternSegment[] {
  const out: PatternSegment[] = [];
  for (const part of key.split('.')) {
    const m = /^([^[\]]*)((?:\[\d+\])*)$/.exec(part);
    if (!m || (m[1] === '' && m[2] === '')) throw new Error(`${key}: "${part}" is not a path segment (name, name[0] or *)`);
    const name = m[1] as string;
    if (name === '*') out.push(WILDCARD);
    else if (name !== '') out.push(name);
    else if (out.length === 0) throw new Error(`${key}: an index needs a list before it`);
    for (const idx of (m[2] as string).matchAll(/\[(\d+)\]/g)) out.push(Number(idx[1]));
  }
  return out;
}

/** True when the key needs more than a plain dotted path (indexes or wildcards). */
export function isPatternPath(key: string): boolean {
  return /[*[\]]/.test(key);
}

function isMap(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
}

function label(path: readonly PathSegment[]): string {
  return path.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `.${s}`)).join('') || '(the document)';
}

/**
 * The concrete paths a pattern names in `root` (a plain JS view of the document).
 * A wildcard stands for every child that exists (none: no path). An index must
 * name an element of a list, or the next one (appended); a missing list is
 * created only for index 0, as Wings does. Missing maps are created.
 */
export function expandPath(root: unknown, pattern: readonly PatternSegment[], key: string): PathSegment[][] {
  const results: PathSegment[][] = [];
  const walk = (node: unknown, at: number, path: PathSegment[]): void => {
    if (at === pattern.length) {
      results.push(path);
      return;
    }
    const seg = pattern[at] as PatternSegment;
    if (seg === WILDCARD) {
      const keys: PathSegment[] = Array.isArray(node) ? node.map((_v, i) => i) : isMap(node) ? Object.keys(node) : [];
      for (const k of keys) {
        const child = (node as Record<PathSegment, unknown>)[k];
        // The rest of the path is set inside each child: a scalar child has no inside.
        if (at + 1 < pattern.length && !isMap(child) && !Array.isArray(child)) continue;
        try {
          walk(child, at + 1, [...path, k]);
        } catch {
          // A child whose shape does not fit the rest of the path is left alone (Wings skips it too).
        }
      }
      return;
    }
    if (typeof seg === 'number') {
      if (node === undefined) {
        if (seg !== 0)
          throw new Error(
            `${key}: ${label([...path, seg])} names an element of ${label(path)}, which does not exist (only [0] creates a list)`,
          );
      } else if (!Array.isArray(node)) {
        throw new Error(`${key}: ${label(path)} is not a list, so ${label([...path, seg])} names nothing`);
      } else if (seg > node.length) {
        throw new Error(`${key}: ${label(path)} has ${node.length} element(s), so ${label([...path, seg])} names nothing`);
      }
      walk(Array.isArray(node) ? node[seg] : undefined, at + 1, [...path, seg]);
      return;
    }
    if (node !== undefined && node !== null && !isMap(node))
      throw new Error(
        `${key}: ${label(path)} is a ${Array.isArray(node) ? 'list' : 'value'}, not a map, so ${label([...path, seg])} names nothing`,
      );
    walk(isMap(node) ? node[seg] : undefined, at + 1, [...path, seg]);
  };
  walk(root, 0, []);
  return results;
}

export function getAt(root: unknown, path: readonly PathSegment[]): unknown {
  let node = root;
  for (const seg of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<PathSegment, unknown>)[seg];
  }
  return node;
}

/** Sets a value on a plain JS tree, creating a list where the next segment is an index and a map otherwise (paths come from expandPath). */
export function setAt(root: Record<string, unknown>, path: readonly PathSegment[], value: unknown): void {
  let node: Record<PathSegment, unknown> = root;
  for (const [i, seg] of path.slice(0, -1).entries()) {
    const next = node[seg];
    if (next === undefined || next === null) node[seg] = typeof path[i + 1] === 'number' ? [] : {};
    node = node[seg] as Record<PathSegment, unknown>;
  }
  node[path[path.length - 1] as PathSegment] = value;
}

/**
 * Value matching (Wings' `if_value`): `regex:RE` rewrites a text value RE matches
 * (`$1` in the replacement is the group); otherwise the value must equal
 * `ifValue` exactly, and is replaced. Undefined: leave the value alone.
 */
export function matchedValue(current: unknown, ifValue: string, replacement: string): string | undefined {
  if (current === undefined || current === null || typeof current === 'object') return undefined;
  const text = String(current);
  if (ifValue.startsWith('regex:')) {
    const re = new RegExp(ifValue.slice('regex:'.length));
    return re.test(text) ? text.replace(new RegExp(re.source, 'g'), replacement) : undefined;
  }
  return text === ifValue ? replacement : undefined;
}

/** Why a value-matching key cannot be applied here (checked at import and by the catalog), or undefined. */
export function ifValueProblem(ifValue: string): string | undefined {
  if (!ifValue.startsWith('regex:')) return undefined;
  try {
    new RegExp(ifValue.slice('regex:'.length));
    return undefined;
  } catch (err) {
    return `${ifValue} does not compile in JavaScript: ${(err as Error).message}`;
  }
}
