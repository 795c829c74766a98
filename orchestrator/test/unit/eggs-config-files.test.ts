import { describe, expect, it } from 'vitest';
import type { ConfigFileSpec } from '../../src/domain/template.js';
import { applyConfigEdits, planConfigEdits, unknownReferences, type ConfigContext } from '../../src/eggs/config-files.js';

const ctx: ConfigContext = { port: 25565, ip: '0.0.0.0', memoryMb: 2048, env: { MOTD: 'Hello', MAX_PLAYERS: '20' } };

function edit(f: ConfigFileSpec, text: string): string {
  const [plan] = planConfigEdits([f], ctx);
  return applyConfigEdits(f.parser, text, plan?.edits ?? []);
}

describe('planConfigEdits: references resolved from the instance', () => {
  it('resolves port, ip, memory, env and allocations', () => {
    const [plan] = planConfigEdits([{ path: 'a', parser: 'file', find: {
      a: '{{server.build.default.port}}', b: '{{server.build.default.ip}}', c: '{{server.build.memory}}', d: '{{env.MOTD}}!', e: '{{server.allocations.default.port}}', f: '{{server.build.env.MAX_PLAYERS}}', g: '{{env.MISSING}}',
    } }], ctx);
    expect(plan?.edits).toEqual([
      { key: 'a', value: '25565' }, { key: 'b', value: '0.0.0.0' }, { key: 'c', value: '2048' }, { key: 'd', value: 'Hello!' },
      { key: 'e', value: '25565' }, { key: 'f', value: '20' }, { key: 'g', value: '' },
    ]);
  });
  it('names references it cannot resolve', () => {
    expect(unknownReferences('{{config.docker.interface}}:{{env.X}}')).toEqual(['config.docker.interface']);
    expect(() => planConfigEdits([{ path: 'p', parser: 'file', find: { k: '{{server.uuid}}' } }], ctx)).toThrow(/names nothing/);
  });
});

describe('applyConfigEdits per parser', () => {
  const table: [string, ConfigFileSpec, string, string][] = [
    ['properties: replace and append', { path: 'server.properties', parser: 'properties', find: { 'server-port': '{{server.build.default.port}}', motd: '{{env.MOTD}}' } },
      '#comment\nserver-port=1\nonline-mode=false\n', '#comment\nserver-port=25565\nonline-mode=false\nmotd=Hello\n'],
    ['properties: new file', { path: 'x.properties', parser: 'properties', find: { a: '1' } }, '', 'a=1\n'],
    ['yaml: nested paths, typed values, comments kept', { path: 'c.yml', parser: 'yaml', find: { 'server.port': '{{server.build.default.port}}', 'server.name': '{{env.MOTD}}', 'flags.on': 'true' } },
      '# top\nserver:\n  port: 1 # old\n  other: x\n', '# top\nserver:\n  port: 25565 # old\n  other: x\n  name: Hello\nflags:\n  on: true\n'],
    ['json: nested, typed', { path: 'c.json', parser: 'json', find: { 'listeners.port': '{{server.build.default.port}}', name: '{{env.MOTD}}' } },
      '{"listeners": {"port": 1, "host": "x"}}', '{\n  "listeners": {\n    "port": 25565,\n    "host": "x"\n  },\n  "name": "Hello"\n}\n'],
    ['ini: section keys, new section, top-level key', { path: 'c.ini', parser: 'ini', find: { 'server.port': '{{server.build.default.port}}', 'extra.k': 'v', top: '1' } },
      'top=0\n[server]\nport=1\nname=x\n[other]\na=b\n', 'top=1\n[server]\nport=25565\nname=x\n[other]\na=b\n[extra]\nk=v\n'],
    ['toml: tables, typed', { path: 'c.toml', parser: 'toml', find: { 'server.port': '{{server.build.default.port}}', 'server.motd': '{{env.MOTD}}' } },
      '[server]\nport = 1\n', '[server]\nport = 25565\nmotd = "Hello"\n'],
    ['xml: element text at a dotted path, escaped, leaf created', { path: 'c.xml', parser: 'xml', find: { 'config.port': '{{server.build.default.port}}', 'config.motd': 'a<b' } },
      '<?xml version="1.0"?>\n<config>\n  <port>1</port>\n</config>\n', '<?xml version="1.0"?>\n<config>\n  <port>25565</port>\n<motd>a&lt;b</motd></config>\n'],
    ['file: lines starting with the key replaced whole, nothing appended', { path: 'run.sh', parser: 'file', find: { 'PORT=': 'PORT={{server.build.default.port}}', 'NOPE=': 'x' } },
      'A=1\nPORT=1\n', 'A=1\nPORT=25565\n'],
  ];
  for (const [name, f, before, after] of table) it(name, () => expect(edit(f, before)).toBe(after));

  it('refuses to edit a file it cannot parse', () => {
    expect(() => edit({ path: 'c.json', parser: 'json', find: { a: '1' } }, '[1,2]')).toThrow(/not a JSON object/);
    expect(() => edit({ path: 'c.xml', parser: 'xml', find: { 'root.a': '1' } }, '<other/>')).toThrow(/no element <root>/);
  });
});
