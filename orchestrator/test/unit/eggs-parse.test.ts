import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseEgg } from '../../src/eggs/parse-egg.js';
import { parse as parseYaml } from 'yaml';
import { normalizeTemplate, normalizeValue } from '../../src/contracts/catalog-rules.js';
import { booleanRepresentation, importVariables } from '../../src/eggs/egg-variables.js';
import type { BooleanValues } from '../../src/domain/template.js';

const fixture = (name: string): unknown => JSON.parse(readFileSync(new URL(`../fixtures/eggs/${name}`, import.meta.url), 'utf8'));

describe('parseEgg: both formats of the test-server egg give the same template', () => {
  for (const file of ['test-server.v1.json', 'test-server.v2.json']) {
    it(file, () => {
      const { template, preview } = parseEgg(fixture(file));
      const eula = file.includes('v2');
      expect(preview.refused).toBeUndefined();
      expect(preview.format).toBe(file.includes('v1') ? 'PTDL_v1' : 'PTDL_v2');
      expect(template).toMatchObject({
        image: 'endercloud-test/mc-server:TAG',
        stdin: true,
        stop: { signal: 'SIGTERM', stdin: 'stop' },
        readiness: { kind: 'log', pattern: '\\)! For help, type ' },
        configFiles: [
          {
            path: 'server.properties',
            parser: 'properties',
            find: { 'server-port': '{{server.build.default.port}}', motd: '{{env.MOTD}}' },
          },
          // v2 has features: [eula] → eula.txt from the operator's acceptance.
          ...(eula ? [{ path: 'eula.txt', parser: 'properties', find: { eula: '{{env.EULA}}' } }] : []),
        ],
        install: { image: 'endercloud-test/mc-server:TAG', entrypoint: 'ash', timeoutMs: 600_000 },
      });
      // Wings' runtime: the line as the egg wrote it, for the image's entrypoint (STARTUP); no container command.
      expect(template?.startup).toMatch(/^\/usr\/local\/bin\/node .*while read -r line/);
      expect(template?.command).toBeUndefined();
      expect(template?.variables).toEqual([
        {
          name: 'MOTD',
          env: 'MOTD',
          type: 'string',
          required: true,
          default: 'An egg server',
          validation: { maxLength: 64 },
          description: 'Message of the day: Shown in the server list.',
        },
        {
          name: 'MAX_PLAYERS',
          env: 'MAX_PLAYERS',
          type: 'integer',
          required: true,
          default: 20,
          validation: { min: 1, max: 500 },
          operatorOnly: true,
          description: 'Max players',
        },
        {
          name: 'VERSION',
          env: 'VERSION',
          type: 'enum',
          required: true,
          default: '1.21.1',
          validation: { values: ['1.21.1', '1.20.6'] },
          description: 'Version',
        },
        ...(!eula
          ? []
          : [
              {
                name: 'EULA',
                env: 'EULA',
                type: 'enum',
                required: true,
                default: 'false',
                validation: { values: ['true', 'false'] },
                booleanValues: { true: 'true', false: 'false' },
                description: 'Accept the Minecraft EULA (https://aka.ms/MinecraftEULA): true lets the server start',
              },
            ]),
      ]);
      expect(template?.eula).toBe(eula ? true : undefined);
      if (eula) expect(preview.mapped.find((m) => m.from === 'features.eula')?.to).toMatch(/operator's acceptance: variable EULA/);
      // The body passes the catalog's own rules unchanged.
      expect(() => normalizeTemplate(template as never)).not.toThrow();
    });
  }

  it('v1 lists the deprecated startup.userInteraction and custom logs as untranslated', () => {
    const { preview } = parseEgg(fixture('test-server.v1.json'));
    const fields = preview.untranslated.map((u) => u.field);
    expect(fields).toContain('config.startup.userInteraction');
    expect(fields).toContain('config.logs');
  });
});

describe('parseEgg: a Java egg with features the importer cannot translate', () => {
  it('java_version with one image to offer is listed: there is nothing to choose', () => {
    const egg = fixture('paper-like.v2.json') as Record<string, unknown>;
    const { preview } = parseEgg({ ...egg, docker_images: { 'Java 21': 'ghcr.io/pterodactyl/yolks:java_21' } });
    expect(preview.untranslated).toContainEqual({
      field: 'features.java_version',
      reason: 'the egg offers one image (docker_images), so there is no Java version to choose',
    });
  });
  const { template, preview } = parseEgg(fixture('paper-like.v2.json'), { image: 'Java 17', memoryMb: 2048 });
  it('chooses the image by key and maps ^C to SIGINT', () => {
    expect(template?.image).toBe('ghcr.io/pterodactyl/yolks:java_17');
    expect(template?.stop).toEqual({ signal: 'SIGINT' });
    expect(template?.resources).toEqual({ memoryMb: 2048 });
    expect(template?.startup).toBe('java -Xms128M -Xmx{{SERVER_MEMORY}}M -Dterminal.jline=false -jar {{SERVER_JARFILE}}');
    expect(preview.mapped.find((m) => m.from === 'startup')?.to).toMatch(
      /^startup: given to the image's own entrypoint as STARTUP, .*\/home\/container/,
    );
    expect(template?.install?.script).toBe('#!/bin/bash\ncd /mnt/server\necho hi\n');
  });
  it('lists every untranslated rule, feature and edit, and the unknown field', () => {
    const text = preview.untranslated.map((u) => `${u.field}: ${u.reason}`).join('\n');
    expect(text).toMatch(/BUILD_NUMBER.*url: no equivalent/);
    expect(text).toMatch(/features\.pid_limit/);
    // file_denylist is translated (the template's fileDenylist, applied by the files API and SFTP): not listed.
    expect(text).not.toMatch(/file_denylist/);
    expect(template?.fileDenylist).toEqual(['*.jar']);
    expect(preview.mapped).toContainEqual({ from: 'file_denylist', to: 'fileDenylist: the files API and SFTP refuse 1 pattern(s)' });
    // java_version is the image choice (two Java images to pick from).
    expect(text).not.toMatch(/java_version/);
    expect(preview.mapped).toContainEqual({
      from: 'features.java_version',
      to: 'the image choice: pick one of Java 21, Java 17 with image at creation (ectl instances create --image) or change it with an update',
    });
    // Wildcards, {{config.docker.interface}} and value matching are translated now: not listed.
    expect(text).not.toMatch(/proxies|iface|a\.b/);
    // user_viewable: false is translated (a hidden variable), so it is not listed.
    expect(text).not.toMatch(/user_viewable/);
    expect(preview.unknownFields).toEqual(['extra_field']);
    expect(template?.variables?.find((v) => v.name === 'DL_PATH')).toMatchObject({ operatorOnly: true, hidden: true });
    expect(preview.mapped).toContainEqual({ from: 'variables[2]', to: 'variable DL_PATH (string, operator-only, hidden)' });
    expect(template?.variables?.find((v) => v.name === 'SERVER_JARFILE')?.validation?.pattern).toBe('^([\\w\\d._-]+)(\\.jar)$');
  });
  it('keeps the edits it can make', () => {
    expect(template?.configFiles?.map((f) => [f.path, Object.keys(f.find)])).toEqual([
      ['server.properties', ['server-ip', 'server-port', 'query.port']],
      ['config/paper.yml', ['settings.bungeecord', 'proxies.*.secret']],
      ['velocity.toml', ['bind', 'iface']],
      ['a.json', ['a.b']],
      ['eula.txt', ['eula']],
    ]);
    expect(template?.configFiles?.[3]?.find).toEqual({ 'a.b': { old: 'new' } });
  });
});

describe('parseEgg refuses what it cannot represent, with the reason', () => {
  const base = fixture('test-server.v2.json') as Record<string, unknown>;
  const variant = (patch: (e: Record<string, unknown>) => void) => {
    const e = structuredClone(base);
    patch(e);
    return e;
  };
  const table: [string, unknown, RegExp][] = [
    ['config.extends', fixture('refused-extends.v2.json'), /config\.extends inherits the configuration of another egg/],
    [
      'an unknown format',
      variant((e) => {
        e.meta = { version: 'PLCN_v9' };
      }),
      /"PLCN_v9" is not a known egg format \(PTDL_v1, PTDL_v2, PLCN_v1, PLCN_v2, PLCN_v3\): a newer format/,
    ],
    [
      'a format nobody wrote',
      variant((e) => {
        e.meta = { version: 'EGG_2' };
      }),
      /"EGG_2" is not a known egg format \(PTDL_v1, PTDL_v2, PLCN_v1, PLCN_v2, PLCN_v3\)$/,
    ],
    ['not an object', [1, 2], /an egg is a JSON object/],
    [
      'no image',
      variant((e) => {
        e.docker_images = {};
      }),
      /names no docker image/,
    ],
    [
      'an image that is no reference',
      variant((e) => {
        e.docker_images = { A: 'a:1' };
      }),
      /image "no pe" is not a valid image reference/,
    ],
    [
      'an unknown parser',
      variant((e) => {
        (e.config as Record<string, unknown>).files = '{"a": {"parser": "hcl", "find": {"x": "1"}}}';
      }),
      /parser "hcl" is not one of/,
    ],
    [
      'config.files that is not JSON',
      variant((e) => {
        (e.config as Record<string, unknown>).files = '{nope';
      }),
      /config\.files is not valid JSON/,
    ],
    [
      'a stop control sequence other than ^C and ^^C',
      variant((e) => {
        (e.config as Record<string, unknown>).stop = '^Z';
      }),
      /only \^C and \^\^C/,
    ],
    [
      'a bad env variable name',
      variant((e) => {
        (e.variables as Record<string, unknown>[])[0]!.env_variable = 'MY-VAR';
      }),
      /"MY-VAR" is not an environment variable name/,
    ],
    [
      'an empty startup',
      variant((e) => {
        e.startup = ' ';
      }),
      /startup is empty/,
    ],
    [
      'an install script without a container',
      variant((e) => {
        (e.scripts as Record<string, Record<string, unknown>>).installation!.container = '';
      }),
      /names no image/,
    ],
  ];
  for (const [name, egg, reason] of table) {
    it(name, () => {
      const { template, preview } = parseEgg(egg, name === 'an image that is no reference' ? { image: 'no pe' } : {});
      expect(template).toBeUndefined();
      expect(preview.refused).toMatch(reason);
    });
  }
});

describe('parseEgg: Pelican formats, field by field', () => {
  const yamlFixture = (name: string): unknown => parseYaml(readFileSync(new URL(`../fixtures/eggs/${name}`, import.meta.url), 'utf8'));
  const eggs: [string, unknown][] = [
    ['PLCN_v1', fixture('bungeecord.plcn_v1.json')],
    ['PLCN_v2', yamlFixture('arma3.plcn_v2.yaml')],
    ['PLCN_v3', fixture('space-engineers.plcn_v3.json')],
  ];
  for (const [format, egg] of eggs) {
    it(`${format}: imported, every top-level field mapped or listed, and the body passes the catalog rules`, () => {
      const { template, preview } = parseEgg(egg);
      expect(preview.refused).toBeUndefined();
      expect(preview.format).toBe(format);
      expect(preview.unknownFields).toEqual([]);
      const said = [...preview.mapped.map((m) => m.from), ...preview.untranslated.map((u) => u.field)].join('\n');
      for (const key of Object.keys(egg as object)) {
        if (key === 'meta') continue;
        expect(said, key).toContain(key);
      }
      expect(() => normalizeTemplate(template as never)).not.toThrow();
    });
  }

  it('PLCN_v1 (BungeeCord): array indexes, wildcards with value matching, all images', () => {
    const { template } = parseEgg(fixture('bungeecord.plcn_v1.json'), { image: 'Java 17' });
    expect(template?.image).toBe('ghcr.io/parkervcp/yolks:java_17');
    expect(template?.images).toEqual({
      'Java 21': 'ghcr.io/parkervcp/yolks:java_21',
      'Java 17': 'ghcr.io/parkervcp/yolks:java_17',
      'Java 11': 'ghcr.io/parkervcp/yolks:java_11',
      'Java 8': 'ghcr.io/parkervcp/yolks:java_8',
    });
    expect(template?.configFiles).toEqual([
      {
        path: 'config.yml',
        parser: 'yaml',
        find: {
          'listeners[0].query_port': '{{server.allocations.default.port}}',
          'listeners[0].host': '0.0.0.0:{{server.allocations.default.port}}',
          'servers.*.address': { 'regex:^(127\\.0\\.0\\.1|localhost)(:\\d{1,5})?$': '{{config.docker.interface}}$2' },
        },
      },
      { path: 'eula.txt', parser: 'properties', find: { eula: '{{env.EULA}}' } },
    ]);
    expect(template?.stop).toEqual({ signal: 'SIGTERM', stdin: 'end' });
  });

  it('PLCN_v2 (Arma, YAML): server.environment references, a 1/0 boolean, numbers as text', () => {
    const { template } = parseEgg(yamlFixture('arma3.plcn_v2.yaml'));
    expect(template?.variables?.find((v) => v.name === 'BATTLE_EYE')).toMatchObject({
      type: 'enum',
      default: '1',
      validation: { values: ['1', '0'] },
      booleanValues: { true: '1', false: '0' },
    });
    expect(template?.variables?.find((v) => v.name === 'MAX_PLAYERS')).toMatchObject({ type: 'integer', default: 32 });
    expect(template?.configFiles?.[1]?.find).toMatchObject({
      name: '{{server.environment.SERVER_NAME}}',
      'headless[0].address': '{{server.allocations.default.ip}}',
    });
  });

  it('PLCN_v3 (Space Engineers): startup_commands, ^^C with a warning, icon listed', () => {
    const { template, preview } = parseEgg(fixture('space-engineers.plcn_v3.json'), { image: 'registry.example.invalid/se-wine:9' });
    // The "Default" startup command (its backslashes make it a shell line).
    expect(template?.startup).toMatch(/^wine64 \.\/DedicatedServer64\/SpaceEngineersDedicated\.exe -noconsole -ignorelastsession/);
    expect(preview.mapped.find((m) => m.from.startsWith('startup_commands'))?.to).toMatch(
      /uses shell syntax, so the image needs the shell/,
    );
    expect(template?.stop).toEqual({ signal: 'SIGINT' });
    expect(template?.image).toBe('registry.example.invalid/se-wine:9');
    expect(Object.keys(template?.images ?? {})).toEqual(['Wine latest', 'Wine staging']);
    expect(preview.mapped).toContainEqual({
      from: '(import option image)',
      to: "image registry.example.invalid/se-wine:9, which is not one of the egg's docker_images (Wine latest, Wine staging)",
    });
    const untranslated = preview.untranslated.map((u) => `${u.field}: ${u.reason}`).join('\n');
    expect(untranslated).toMatch(/config\.stop: \^\^C is Ctrl-C twice.*one SIGINT/);
    expect(untranslated).toMatch(/startup_commands\["Verbose"\]: another startup command/);
    expect(untranslated).toMatch(/icon: the egg's icon/);
    // No default: the install script's `"${AUTO_UPDATE}" == "1"` decides the representation.
    expect(template?.variables?.find((v) => v.name === 'AUTO_UPDATE')).toMatchObject({
      booleanValues: { true: '1', false: '0' },
      validation: { values: ['1', '0'] },
    });
  });

  it('a docker_images choice the template field cannot hold is listed, not stored', () => {
    const egg = { ...(fixture('test-server.v2.json') as Record<string, unknown>), docker_images: { Good: 'a:1', Bad: 'not an image' } };
    const { template, preview } = parseEgg(egg);
    expect(template?.images).toEqual({ Good: 'a:1' });
    expect(preview.untranslated).toContainEqual({
      field: 'docker_images["Bad"]',
      reason: 'not kept in images: it is not an image reference',
    });
  });

  it('a PTDL_v2 egg carrying startup_commands lists it as unknown (only PLCN_v3 has it)', () => {
    const egg = { ...(fixture('test-server.v2.json') as Record<string, unknown>), startup_commands: { Default: 'x' } };
    expect(parseEgg(egg).preview.unknownFields).toContain('startup_commands');
  });
});

describe("booleanRepresentation: the egg's own spelling of a boolean", () => {
  const table: [string, string, string, BooleanValues | undefined][] = [
    ['default 1', '1', '', { true: '1', false: '0' }],
    ['default 0', '0', '', { true: '1', false: '0' }],
    ['default true', 'true', '', { true: 'true', false: 'false' }],
    ['default False (any case)', 'False', '', { true: 'true', false: 'false' }],
    ['no default, startup tests "$BATTLE_EYE" == "1"', '', '$( [ "$BATTLE_EYE" == "1" ] || printf %s -noBE )', { true: '1', false: '0' }],
    ['no default, script tests ${BATTLE_EYE} = true', '', 'if [ ${BATTLE_EYE} = true ]; then x; fi', { true: 'true', false: 'false' }],
    ['no default, {{BATTLE_EYE}} -eq 0', '', '[ {{BATTLE_EYE}} -eq 0 ]', { true: '1', false: '0' }],
    ['no default, a longer name does not count', '', '[ "$BATTLE_EYE_X" == "1" ]', undefined],
    ['no default, never compared', '', 'echo $BATTLE_EYE', undefined],
  ];
  for (const [name, def, text, want] of table) it(name, () => expect(booleanRepresentation('BATTLE_EYE', def, text)).toEqual(want));

  it('without a clue, the four values are kept and the preview says so', () => {
    const v = importVariables([{ env_variable: 'FLAG', rules: 'boolean' }]);
    expect(v.variables[0]).toMatchObject({ type: 'enum', validation: { values: ['0', '1', 'true', 'false'] } });
    expect(v.variables[0]?.booleanValues).toBeUndefined();
    expect(v.untranslated[0]?.reason).toMatch(/neither the default nor the egg's scripts say/);
  });

  it("a default in the other case is kept in the egg's spelling", () => {
    const v = importVariables([{ env_variable: 'FLAG', rules: 'required|boolean', default_value: 'TRUE' }]);
    expect(v.variables[0]).toMatchObject({ default: 'true', booleanValues: { true: 'true', false: 'false' } });
  });
});

describe('normalizeValue: input true/false/1/0 stored as the egg spells it', () => {
  const numeric = { booleanValues: { true: '1', false: '0' } };
  const words = { booleanValues: { true: 'true', false: 'false' } };
  const table: [string, object, unknown, unknown][] = [
    ['JSON true → 1', numeric, true, '1'],
    ['"true" → 1', numeric, 'true', '1'],
    ['"FALSE" → 0', numeric, 'FALSE', '0'],
    ['1 (number) → 1', numeric, 1, '1'],
    ['"0" → false', words, '0', 'false'],
    ['JSON true → true', words, true, 'true'],
    ['"yes" unchanged (then refused by the values)', numeric, 'yes', 'yes'],
    ['no booleanValues: unchanged', {}, true, true],
  ];
  for (const [name, variable, value, want] of table) it(name, () => expect(normalizeValue(variable, value)).toBe(want));
});
