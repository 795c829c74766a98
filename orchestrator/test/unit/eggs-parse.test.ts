import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseEgg } from '../../src/eggs/parse-egg.js';
import { normalizeTemplate } from '../../src/contracts/catalog-rules.js';

const fixture = (name: string): unknown => JSON.parse(readFileSync(new URL(`../fixtures/eggs/${name}`, import.meta.url), 'utf8'));

describe('parseEgg: both formats of the test-server egg give the same template', () => {
  for (const file of ['test-server.v1.json', 'test-server.v2.json']) {
    it(file, () => {
      const { template, preview } = parseEgg(fixture(file));
      expect(preview.refused).toBeUndefined();
      expect(preview.format).toBe(file.includes('v1') ? 'PTDL_v1' : 'PTDL_v2');
      expect(template).toMatchObject({
        image: 'endercloud-test/mc-server:TAG',
        stdin: true,
        stop: { signal: 'SIGTERM', stdin: 'stop' },
        readiness: { kind: 'log', pattern: '\\)! For help, type ' },
        configFiles: [{ path: 'server.properties', parser: 'properties', find: { 'server-port': '{{server.build.default.port}}', motd: '{{env.MOTD}}' } }],
        install: { image: 'endercloud-test/mc-server:TAG', entrypoint: 'ash', timeoutMs: 600_000 },
      });
      expect(template?.command?.slice(0, 2)).toEqual(['/bin/sh', '-c']);
      expect(template?.variables).toEqual([
        { name: 'MOTD', env: 'MOTD', type: 'string', required: true, default: 'An egg server', validation: { maxLength: 64 }, description: 'Message of the day: Shown in the server list.' },
        { name: 'MAX_PLAYERS', env: 'MAX_PLAYERS', type: 'integer', required: true, default: 20, validation: { min: 1, max: 500 }, operatorOnly: true, description: 'Max players' },
        { name: 'VERSION', env: 'VERSION', type: 'enum', required: true, default: '1.21.1', validation: { values: ['1.21.1', '1.20.6'] }, description: 'Version' },
      ]);
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
  const { template, preview } = parseEgg(fixture('paper-like.v2.json'), { image: 'Java 17', memoryMb: 2048 });
  it('chooses the image by key and maps ^C to SIGINT', () => {
    expect(template?.image).toBe('ghcr.io/pterodactyl/yolks:java_17');
    expect(template?.stop).toEqual({ signal: 'SIGINT' });
    expect(template?.resources).toEqual({ memoryMb: 2048 });
    expect(template?.command).toEqual(['java', '-Xms128M', '-Xmx{{SERVER_MEMORY}}M', '-Dterminal.jline=false', '-jar', '{{SERVER_JARFILE}}']);
    expect(template?.install?.script).toBe('#!/bin/bash\ncd /mnt/server\necho hi\n');
  });
  it('lists every untranslated rule, feature and edit, and the unknown field', () => {
    const text = preview.untranslated.map((u) => `${u.field}: ${u.reason}`).join('\n');
    expect(text).toMatch(/BUILD_NUMBER.*url: no equivalent/);
    expect(text).toMatch(/features\.java_version/);
    expect(text).toMatch(/file_denylist/);
    expect(text).toMatch(/proxies\.\*\.secret.*wildcard/);
    expect(text).toMatch(/iface.*config\.docker\.interface/);
    expect(text).toMatch(/a\.b.*value-matching/);
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
      ['config/paper.yml', ['settings.bungeecord']],
      ['velocity.toml', ['bind']],
    ]);
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
    ['an unknown format', variant((e) => { e.meta = { version: 'PLCN_v9' }; }), /"PLCN_v9" is not a known egg format \(PTDL_v1, PTDL_v2\)/],
    ['not an object', [1, 2], /an egg is a JSON object/],
    ['no image', variant((e) => { e.docker_images = {}; }), /names no docker image/],
    ['an image key it does not have', variant((e) => { e.docker_images = { A: 'a:1' }; }), /image "nope" is not one of the egg's docker_images: A/],
    ['an unknown parser', variant((e) => { (e.config as Record<string, unknown>).files = '{"a": {"parser": "hcl", "find": {"x": "1"}}}'; }), /parser "hcl" is not one of/],
    ['config.files that is not JSON', variant((e) => { (e.config as Record<string, unknown>).files = '{nope'; }), /config\.files is not valid JSON/],
    ['a stop control sequence other than ^C', variant((e) => { (e.config as Record<string, unknown>).stop = '^Z'; }), /only \^C/],
    ['a bad env variable name', variant((e) => { (e.variables as Record<string, unknown>[])[0]!.env_variable = 'MY-VAR'; }), /"MY-VAR" is not an environment variable name/],
    ['an empty startup', variant((e) => { e.startup = ' '; }), /startup is empty/],
    ['an install script without a container', variant((e) => { ((e.scripts as Record<string, Record<string, unknown>>).installation)!.container = ''; }), /names no image/],
  ];
  for (const [name, egg, reason] of table) {
    it(name, () => {
      const { template, preview } = parseEgg(egg, name === 'an image key it does not have' ? { image: 'nope' } : {});
      expect(template).toBeUndefined();
      expect(preview.refused).toMatch(reason);
    });
  }
});
