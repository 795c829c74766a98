// Pure tests of the apply file parser and the preview (create / unchanged /
// update / conflict) that `ectl apply` prints before writing.

import { describe, expect, it } from 'vitest';
import { parseApplyFile, resolveLayers } from '../../src/cli/apply-file.js';
import { diffPaths, formatPlan, planApply, planCounts, writesOf, type CurrentState } from '../../src/cli/apply-plan.js';
import { CliError } from '../../src/cli/errors.js';

const SUM_A = 'a'.repeat(64);
const SUM_B = 'b'.repeat(64);

const FILE = `
apiVersion: endercloud/v1
templates:
  - name: paper
    version: "1.0"
    spec:
      image: example/paper:1
      env: { EULA: true, MAX_PLAYERS: 20 }
      resources: { memoryMb: 1024 }
      layers: [base, "plugins@${SUM_A}"]
groups:
  - id: lobby
    kind: ephemeral
    caps: { maxInstances: 5 }
    variants:
      - id: default
        template: paper@1.0
        env: { MOTD: hello }
  - id: survival
    kind: persistent
    placement: distributed
    variants:
      - id: main
        template: { name: paper, version: "1.0" }
        extraLayers: [{ id: world-config, checksum: ${SUM_B} }]
`;

function state(templates: Record<string, object> = {}, groups: Record<string, object> = {}): CurrentState {
  return {
    templates: new Map(Object.entries(templates)) as CurrentState['templates'],
    groups: new Map(Object.entries(groups)) as CurrentState['groups'],
  };
}

describe('apply file parsing', () => {
  it('normalises shorthands: env scalars become strings, layer and template refs become objects', () => {
    const doc = parseApplyFile(FILE);
    expect(doc.templates[0]!.spec.env).toEqual({ EULA: 'true', MAX_PLAYERS: '20' });
    expect(doc.templates[0]!.spec.layers).toEqual([{ id: 'base' }, { id: 'plugins', checksum: SUM_A }]);
    expect(doc.groups[0]!.body).toEqual({
      kind: 'ephemeral',
      placement: 'packed',
      caps: { maxInstances: 5 },
      variants: [{ id: 'default', template: { name: 'paper', version: '1.0' }, extraLayers: [], env: { MOTD: 'hello' } }],
    });
  });

  it('resolves checksum-less layer refs to the newest pushed checksum, and names a layer never pushed', () => {
    const doc = parseApplyFile(FILE);
    const resolved = resolveLayers(doc, new Map([['base', SUM_B]]));
    expect(resolved.templates[0]!.spec.layers).toEqual([
      { id: 'base', checksum: SUM_B },
      { id: 'plugins', checksum: SUM_A },
    ]);
    expect(() => resolveLayers(doc, new Map())).toThrow(/layer "base" has never been pushed/);
  });

  it.each([
    [
      'an unquoted numeric version',
      'templates: [{ name: t, version: 1.10, spec: { image: x } }]',
      /templates\[0\]\.version: must be a quoted string/,
    ],
    ['an unknown top-level key', 'tempaltes: []', /tempaltes: is not a known field/],
    ['an unknown group kind', 'groups: [{ id: g, kind: forever, variants: [] }]', /groups\[0\]\.kind: must be persistent or ephemeral/],
    ['a group without variants', 'groups: [{ id: g, kind: ephemeral }]', /needs at least one variant/],
    [
      'a duplicate group',
      'groups: [{ id: g, kind: ephemeral, variants: [{id: v, template: t@1}] }, { id: g, kind: ephemeral, variants: [{id: v, template: t@1}] }]',
      /group "g" appears twice/,
    ],
    [
      'a bad layer checksum',
      'templates: [{ name: t, version: "1", spec: { image: x, layers: ["l@123"] } }]',
      /checksum: must be a lowercase hex SHA-256/,
    ],
    ['broken YAML', 'groups: [', /file: /],
    ['an empty file', '', /the file is empty/],
  ])('rejects %s as a usage error naming the field', (_what, text, message) => {
    let caught: unknown;
    try {
      parseApplyFile(text);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(CliError);
    expect((caught as CliError).exitCode).toBe(2);
    expect((caught as CliError).message).toMatch(message);
  });
});

describe('apply preview', () => {
  const doc = resolveLayers(parseApplyFile(FILE), new Map([['base', SUM_B]]));
  const stored = {
    template: doc.templates[0]!.spec,
    lobby: { id: 'lobby', createdAt: 1, updatedAt: 2, scaling: null, ...doc.groups[0]!.body },
    survival: { id: 'survival', ...doc.groups[1]!.body },
  };

  it('plans creates for everything on an empty orchestrator, templates written before groups', () => {
    const plan = planApply(doc, state());
    expect(plan.map((i) => [i.kind, i.key, i.action])).toEqual([
      ['template', 'paper@1.0', 'create'],
      ['group', 'lobby', 'create'],
      ['group', 'survival', 'create'],
    ]);
    expect(writesOf([...plan].reverse()).map((i) => i.kind)).toEqual(['template', 'group', 'group']);
  });

  it('shows everything unchanged when the stored state equals the file (server fields and empty values ignored)', () => {
    const plan = planApply(doc, state({ 'paper@1.0': stored.template }, { lobby: stored.lobby, survival: stored.survival }));
    expect(plan.every((i) => i.action === 'unchanged')).toBe(true);
    expect(writesOf(plan)).toEqual([]);
  });

  it('calls a different body for an existing template version a conflict, naming the changed path', () => {
    const changed = { ...stored.template, resources: { memoryMb: 2048 } };
    const plan = planApply(doc, state({ 'paper@1.0': changed }, { lobby: stored.lobby, survival: stored.survival }));
    expect(plan[0]).toMatchObject({ action: 'conflict', changes: ['resources.memoryMb'] });
    expect(planCounts(plan)).toEqual({ push: 0, create: 0, unchanged: 2, update: 0, conflict: 1 });
    expect(writesOf(plan)).toEqual([]);
  });

  it('plans a group update for changed, added and removed variants, ignoring variant order', () => {
    const lobby = {
      ...stored.lobby,
      caps: {},
      variants: [{ id: 'old', template: { name: 'paper', version: '1.0' }, extraLayers: [], env: {} }],
    };
    const survival = { ...stored.survival, variants: [...(doc.groups[1]!.body.variants as object[])].reverse() };
    const plan = planApply(doc, state({ 'paper@1.0': stored.template }, { lobby, survival }));
    expect(plan.find((i) => i.key === 'lobby')).toMatchObject({
      action: 'update',
      changes: ['caps.maxInstances', 'variants.default (new)', 'variants.old (removed)'],
    });
    expect(plan.find((i) => i.key === 'survival')!.action).toBe('unchanged');
  });

  it('applies the injected normalizer so server-filled defaults do not read as changes', () => {
    const withDefaults = { ...stored.template, restartPolicy: 'never', containerPort: 25565 };
    const normalize = { template: (s: object) => ({ restartPolicy: 'never', containerPort: 25565, ...s }), group: (b: object) => b };
    const plan = planApply(doc, state({ 'paper@1.0': withDefaults }), normalize as never);
    expect(plan[0]!.action).toBe('unchanged');
    expect(planApply(doc, state({ 'paper@1.0': withDefaults }))[0]!.action).toBe('conflict');
  });

  it('formats one line per object with a summary', () => {
    const text = formatPlan(planApply(doc, state({ 'paper@1.0': stored.template })));
    expect(text).toBe(
      [
        '= template paper@1.0  unchanged',
        '+ group lobby         create',
        '+ group survival      create',
        '2 to create, 0 to update, 1 unchanged, 0 in conflict',
        '',
      ].join('\n'),
    );
  });

  it('diffPaths treats absent, null, {} and [] alike and reports array length changes at the array', () => {
    expect(diffPaths({ a: {}, b: [] }, { c: null })).toEqual([]);
    expect(diffPaths({ l: [1, 2] }, { l: [1] })).toEqual(['l']);
    expect(diffPaths({ l: [1, { x: 1 }] }, { l: [1, { x: 2 }] })).toEqual(['l[1].x']);
  });
});
