// Comments cite the project's own docs/, in our words (issue 22): no comment in
// src/ or test/ points at a specification outside the repository, and every
// `docs/<file>.md "<Heading>"` a comment cites names a file and a heading that
// exist, so a renamed section breaks here and not in a reader's hands.

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const PKG = resolve(import.meta.dirname, '../..');
const DOCS = resolve(PKG, '../docs');

/** Citations of design notes kept outside the repository. */
const OUTSIDE = /\bseed 00\d|ARCHITECTURE\.md|FIELD-NOTES|STYLE\.md|\bhabit \d/;

function tsFiles(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) tsFiles(path, out);
    else if (path.endsWith('.ts')) out.push(path);
  }
  return out;
}

const files = [...tsFiles(join(PKG, 'src')), ...tsFiles(join(PKG, 'test'))].filter((f) => f !== import.meta.filename);
const headings = new Map(
  readdirSync(DOCS)
    .filter((n) => n.endsWith('.md'))
    .map((n) => [
      n,
      readFileSync(join(DOCS, n), 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('#'))
        .map((l) => l.replace(/^#+\s*/, '')),
    ]),
);

describe('comments cite docs/', () => {
  it('no comment cites a specification outside the repository', () => {
    const found: string[] = [];
    for (const file of files) {
      const rel = relative(PKG, file);
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (OUTSIDE.test(line)) found.push(`${rel}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(found).toEqual([]);
  });

  it('every cited docs/ file and "heading" exists', () => {
    const broken: string[] = [];
    for (const file of files) {
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          for (const m of line.matchAll(/docs\/([\w.-]+\.md)(?:,? "([^"]+)")?/g)) {
            const doc = basename(m[1]!);
            const heads = headings.get(doc);
            const where = `${relative(PKG, file)}:${i + 1}`;
            if (!heads) broken.push(`${where}: docs/${doc} does not exist`);
            else if (m[2] && !heads.some((h) => h.includes(m[2]!))) broken.push(`${where}: docs/${doc} has no heading "${m[2]}"`);
          }
        });
    }
    expect(broken).toEqual([]);
  });
});
