// Guards ectl apply's dry-run checks: every field the orchestrator would
// refuse is named by file, object and field, using the server's own schemas
// and catalog rules (contracts/), and a changed immutable version shows its diff.

import { describe, expect, it } from 'vitest';
import { checkApplyDocument, describeConflict } from '../../src/cli/apply-check.js';
import { parseApplyFile } from '../../src/cli/apply-file.js';

const FILE = 'examples/network.yml';

function fileWith(spec: string, group = ''): string {
  return `
templates:
  - name: minecraft
    version: "1.0.0"
    spec:
      image: example/paper:1
${spec
  .split('\n')
  .map((l) => `      ${l}`)
  .join('\n')}
groups:
  - id: lobby
    kind: ephemeral
    variants:
      - id: default
        template: minecraft@1.0.0
${group}`;
}

const problems = (text: string) => checkApplyDocument(parseApplyFile(text, FILE), FILE);

describe('checkApplyDocument', () => {
  it.each([
    [
      'memoryMb: 2G',
      'resources: { memoryMb: 2G }',
      'templates[minecraft@1.0.0].spec.resources.memoryMb: must be an integer number of MiB (got "2G")',
    ],
    [
      'a negative memoryMb',
      'resources: { memoryMb: -5 }',
      'templates[minecraft@1.0.0].spec.resources.memoryMb: must be at least 16 (got -5)',
    ],
    [
      'a quoted memoryMb',
      'resources: { memoryMb: "1536" }',
      'templates[minecraft@1.0.0].spec.resources.memoryMb: must be an integer number of MiB (got "1536")',
    ],
    [
      'a misspelt containerPort',
      'resources: { memoryMb: 1024 }\ncontainerport: 25565',
      'templates[minecraft@1.0.0].spec.containerport: is not a field here (did you mean containerPort?)',
    ],
    [
      'caps.maxInstance',
      'resources: { memoryMb: 1024 }\ncaps: { maxInstance: 3 }',
      'templates[minecraft@1.0.0].spec.caps.maxInstance: is not a field here (did you mean maxInstances?)',
    ],
    [
      'resources.memoryMB',
      'resources: { memoryMB: 1024 }',
      'templates[minecraft@1.0.0].spec.resources.memoryMB: is not a field here (did you mean memoryMb?)',
    ],
    [
      'a rule refusal (secret default)',
      'resources: { memoryMb: 1024 }\nvariables: [{ name: RCON, type: string, secret: true, default: x }]',
      'templates[minecraft@1.0.0].spec.variables[0].default: must not be set on a secret variable',
    ],
  ])('names file, object and field: %s', (_name, spec, expected) => {
    const found = problems(fileWith(spec));
    expect(
      found.some((p) => p.startsWith(`${FILE}: ${expected}`)),
      found.join('\n'),
    ).toBe(true);
  });

  it('a missing memoryMb (beside memoryMB) is named too', () => {
    expect(problems(fileWith('resources: { memoryMB: 1024 }'))).toContain(
      `${FILE}: templates[minecraft@1.0.0].spec.resources.memoryMb: is required (an integer number of MiB)`,
    );
  });

  it('groups are checked with the same schemas and rules', () => {
    const found = problems(fileWith('resources: { memoryMb: 1024 }', '        resources: { memoryMb: 8 }\n'));
    expect(found).toEqual([`${FILE}: groups[lobby].variants[0].resources.memoryMb: must be at least 16 (got 8)`]);
  });

  it('an accepted file has no problems', () => {
    expect(problems(fileWith('resources: { memoryMb: 1024 }\ncontainerPort: 25565'))).toEqual([]);
  });
});

describe('describeConflict', () => {
  it('shows each changed field with both values and says to bump the version', () => {
    const lines = describeConflict('minecraft@1.0.0', { resources: { memoryMb: 1024 } }, { resources: { memoryMb: 2048 } }, [
      'resources.memoryMb',
    ]);
    expect(lines).toEqual([
      'template minecraft@1.0.0 already exists with a different body:',
      '  resources.memoryMb: 1024 on the orchestrator, 2048 in the file',
      expect.stringMatching(/immutable: bump the version of minecraft/),
    ]);
  });
});
