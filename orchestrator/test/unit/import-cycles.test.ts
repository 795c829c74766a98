// No runtime import cycle in src/ (issue 22: agent/container-config →
// egg-runtime → data-import was one). Reads every static `import … from` and
// `export … from` of a relative module; type-only imports are erased by the
// compiler and dynamic `import()` loads lazily, so neither can form a cycle at
// load time. Tarjan's algorithm lists each strongly connected group.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(import.meta.dirname, '../../src');

function sourceFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) sourceFiles(path, out);
    else if (path.endsWith('.ts')) out.push(path);
  }
  return out;
}

function runtimeImports(file: string, known: Set<string>): string[] {
  const text = readFileSync(file, 'utf8');
  const deps: string[] = [];
  for (const m of text.matchAll(/^(?:import|export)\s+(type\s+)?[^'"]*?from\s+'(\.[^']+)'/gms)) {
    if (m[1]) continue;
    const target = resolve(dirname(file), m[2]!.replace(/\.js$/, '.ts'));
    if (known.has(target)) deps.push(target);
  }
  return deps;
}

function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1 || graph.get(v)?.includes(v)) found.push(group);
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found;
}

describe('import graph of src/', () => {
  it('has no runtime import cycle', () => {
    const files = sourceFiles(SRC);
    const known = new Set(files);
    const graph = new Map(files.map((f) => [f, runtimeImports(f, known)]));
    expect(graph.size).toBeGreaterThan(100);
    expect(cycles(graph).map((group) => group.map((f) => relative(SRC, f)).sort())).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(cycles(graph).map((g) => g.sort())).toEqual([['a', 'b', 'c']]);
  });
});
