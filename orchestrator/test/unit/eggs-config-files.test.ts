import { describe, expect, it } from 'vitest';
import type { ConfigFileSpec, ConfigParser } from '../../src/domain/template.js';
import { configKeyProblem } from '../../src/eggs/config-keys.js';
import { applyConfigEdits, planConfigEdits, unknownReferences, type ConfigContext } from '../../src/eggs/config-files.js';

const ctx: ConfigContext = { port: 25565, ip: '0.0.0.0', memoryMb: 2048, env: { MOTD: 'Hello', MAX_PLAYERS: '20' } };

function edit(f: ConfigFileSpec, text: string): string {
  const [plan] = planConfigEdits([f], ctx);
  return applyConfigEdits(f.parser, text, plan?.edits ?? []);
}

describe('planConfigEdits: references resolved from the instance', () => {
  it('resolves port, ip, memory, env and allocations', () => {
    const [plan] = planConfigEdits(
      [
        {
          path: 'a',
          parser: 'file',
          find: {
            a: '{{server.build.default.port}}',
            b: '{{server.build.default.ip}}',
            c: '{{server.build.memory}}',
            d: '{{env.MOTD}}!',
            e: '{{server.allocations.default.port}}',
            f: '{{server.build.env.MAX_PLAYERS}}',
            g: '{{env.MISSING}}',
            h: '{{server.environment.MOTD}}',
            i: '{{ server.build.memory_limit }}',
            j: '{{config.docker.interface}}:1',
            k: '{{server.allocations.default.ip}}',
          },
        },
      ],
      ctx,
    );
    expect(plan?.edits).toEqual([
      { key: 'a', value: '25565' },
      { key: 'b', value: '0.0.0.0' },
      { key: 'c', value: '2048' },
      { key: 'd', value: 'Hello!' },
      { key: 'e', value: '25565' },
      { key: 'f', value: '20' },
      { key: 'g', value: '' },
      { key: 'h', value: 'Hello' },
      { key: 'i', value: '2048' },
      { key: 'j', value: '0.0.0.0:1' },
      { key: 'k', value: '0.0.0.0' },
    ]);
  });
  it('plans one edit per value of a value-matching key, references filled in the new value only', () => {
    const [plan] = planConfigEdits(
      [
        {
          path: 'c.yml',
          parser: 'yaml',
          find: { 'servers.*.address': { 'regex:^localhost(:\\d+)?$': '{{server.build.default.ip}}$1', '{{env.MOTD}}': 'x' } },
        },
      ],
      ctx,
    );
    expect(plan?.edits).toEqual([
      { key: 'servers.*.address', ifValue: 'regex:^localhost(:\\d+)?$', value: '0.0.0.0$1' },
      { key: 'servers.*.address', ifValue: '{{env.MOTD}}', value: 'x' },
    ]);
  });
  it('names references it cannot resolve', () => {
    expect(unknownReferences('{{config.docker.foo}}:{{env.X}}:{{server.environment.Y}}')).toEqual(['config.docker.foo']);
    expect(() => planConfigEdits([{ path: 'p', parser: 'file', find: { k: '{{server.uuid}}' } }], ctx)).toThrow(/names nothing/);
  });
});

describe('applyConfigEdits per parser', () => {
  const table: [string, ConfigFileSpec, string, string][] = [
    [
      'properties: replace and append',
      { path: 'server.properties', parser: 'properties', find: { 'server-port': '{{server.build.default.port}}', motd: '{{env.MOTD}}' } },
      '#comment\nserver-port=1\nonline-mode=false\n',
      '#comment\nserver-port=25565\nonline-mode=false\nmotd=Hello\n',
    ],
    ['properties: new file', { path: 'x.properties', parser: 'properties', find: { a: '1' } }, '', 'a=1\n'],
    [
      'yaml: nested paths, typed values, comments kept',
      {
        path: 'c.yml',
        parser: 'yaml',
        find: { 'server.port': '{{server.build.default.port}}', 'server.name': '{{env.MOTD}}', 'flags.on': 'true' },
      },
      '# top\nserver:\n  port: 1 # old\n  other: x\n',
      '# top\nserver:\n  port: 25565 # old\n  other: x\n  name: Hello\nflags:\n  on: true\n',
    ],
    [
      'json: nested, typed',
      { path: 'c.json', parser: 'json', find: { 'listeners.port': '{{server.build.default.port}}', name: '{{env.MOTD}}' } },
      '{"listeners": {"port": 1, "host": "x"}}',
      '{\n  "listeners": {\n    "port": 25565,\n    "host": "x"\n  },\n  "name": "Hello"\n}\n',
    ],
    [
      'ini: section keys, new section, top-level key',
      { path: 'c.ini', parser: 'ini', find: { 'server.port': '{{server.build.default.port}}', 'extra.k': 'v', top: '1' } },
      'top=0\n[server]\nport=1\nname=x\n[other]\na=b\n',
      'top=1\n[server]\nport=25565\nname=x\n[other]\na=b\n[extra]\nk=v\n',
    ],
    [
      'toml: tables, typed',
      { path: 'c.toml', parser: 'toml', find: { 'server.port': '{{server.build.default.port}}', 'server.motd': '{{env.MOTD}}' } },
      '[server]\nport = 1\n',
      '[server]\nport = 25565\nmotd = "Hello"\n',
    ],
    [
      'xml: element text at a dotted path, escaped, leaf created',
      { path: 'c.xml', parser: 'xml', find: { 'config.port': '{{server.build.default.port}}', 'config.motd': 'a<b' } },
      '<?xml version="1.0"?>\n<config>\n  <port>1</port>\n</config>\n',
      '<?xml version="1.0"?>\n<config>\n  <port>25565</port>\n<motd>a&lt;b</motd></config>\n',
    ],
    [
      'file: lines starting with the key replaced whole, nothing appended',
      { path: 'run.sh', parser: 'file', find: { 'PORT=': 'PORT={{server.build.default.port}}', 'NOPE=': 'x' } },
      'A=1\nPORT=1\n',
      'A=1\nPORT=25565\n',
    ],
  ];
  for (const [name, f, before, after] of table) it(name, () => expect(edit(f, before)).toBe(after));

  it('refuses to edit a file it cannot parse', () => {
    expect(() => edit({ path: 'c.json', parser: 'json', find: { a: '1' } }, '[1,2]')).toThrow(/not a JSON object/);
    expect(() => edit({ path: 'c.xml', parser: 'xml', find: { 'root.a': '1' } }, '<other/>')).toThrow(/no element <root>/);
  });
});

describe('applyConfigEdits: paths with indexes and wildcards, value matching', () => {
  const bungee = [
    'listeners:',
    '  - host: 0.0.0.0:25577 # the proxy',
    '    query_port: 25577',
    '    motd: hi',
    'servers:',
    '  lobby:',
    '    address: localhost:25566',
    '  survival:',
    '    address: 127.0.0.1:25567',
    '  remote:',
    '    address: 10.0.0.5:25565',
    '',
  ].join('\n');
  const bungeeFind: ConfigFileSpec['find'] = {
    'listeners[0].query_port': '{{server.allocations.default.port}}',
    'listeners[0].host': '0.0.0.0:{{server.allocations.default.port}}',
    'servers.*.address': { 'regex:^(127\\.0\\.0\\.1|localhost)(:\\d{1,5})?$': '{{config.docker.interface}}$2' },
  };
  const table: [string, ConfigFileSpec, string, string][] = [
    [
      'yaml: BungeeCord listeners[0] and servers.*.address by regex, comments kept',
      { path: 'config.yml', parser: 'yaml', find: bungeeFind },
      bungee,
      bungee
        .replace('0.0.0.0:25577 # the proxy', '0.0.0.0:25565 # the proxy')
        .replace('query_port: 25577', 'query_port: 25565')
        .replace('localhost:25566', '0.0.0.0:25566')
        .replace('127.0.0.1:25567', '0.0.0.0:25567'),
    ],
    [
      'yaml: a missing list is created by [0]',
      { path: 'c.yml', parser: 'yaml', find: { 'listeners[0].host': 'h' } },
      'a: 1\n',
      'a: 1\nlisteners:\n  - host: h\n',
    ],
    ['yaml: the next index appends', { path: 'c.yml', parser: 'yaml', find: { 'l[1]': '2' } }, 'l:\n  - 1\n', 'l:\n  - 1\n  - 2\n'],
    [
      'yaml: a wildcard over a list sets the rest in each element',
      { path: 'c.yml', parser: 'yaml', find: { 'worlds.*.port': '{{server.build.default.port}}' } },
      'worlds:\n  - name: a\n  - name: b\n',
      'worlds:\n  - name: a\n    port: 25565\n  - name: b\n    port: 25565\n',
    ],
    [
      'yaml: an exact value match replaces only that value',
      { path: 'c.yml', parser: 'yaml', find: { 'a.*': { old: 'new' } } },
      'a:\n  x: old\n  y: other\n',
      'a:\n  x: new\n  y: other\n',
    ],
    [
      'yaml: value matching never creates a missing key',
      { path: 'c.yml', parser: 'yaml', find: { 'a.b': { old: 'new' } } },
      'c: 1\n',
      'c: 1\n',
    ],
    [
      'json: indexes, nested indexes and a wildcard with value matching',
      {
        path: 'c.json',
        parser: 'json',
        find: {
          'listeners[0].port': '{{server.build.default.port}}',
          'm[0][1]': 'x',
          'servers.*.host': { 'regex:^localhost$': '{{server.build.default.ip}}' },
        },
      },
      '{"listeners":[{"port":1},{"port":2}],"m":[["a","b"]],"servers":{"a":{"host":"localhost"},"b":{"host":"example.org"}}}',
      `${JSON.stringify({ listeners: [{ port: 25565 }, { port: 2 }], m: [['a', 'x']], servers: { a: { host: '0.0.0.0' }, b: { host: 'example.org' } } }, null, 2)}\n`,
    ],
    [
      'toml: an array of tables by index',
      { path: 'c.toml', parser: 'toml', find: { 'servers[1].port': '{{server.build.default.port}}' } },
      '[[servers]]\nport = 1\n\n[[servers]]\nport = 2\n',
      '[[servers]]\nport = 1\n\n[[servers]]\nport = 25565\n',
    ],
    [
      'properties: value matching rewrites only a fitting value',
      {
        path: 's.properties',
        parser: 'properties',
        find: { 'server-ip': { 'regex:^127\\.0\\.0\\.1$': '0.0.0.0' }, motd: { nope: 'x' }, absent: { a: 'b' } },
      },
      'server-ip=127.0.0.1\nmotd=hi\n',
      'server-ip=0.0.0.0\nmotd=hi\n',
    ],
    [
      'ini: value matching in a section',
      { path: 'c.ini', parser: 'ini', find: { 'net.bind': { '127.0.0.1': '0.0.0.0' }, 'gone.k': { a: 'b' } } },
      '[net]\nbind = 127.0.0.1\n',
      '[net]\nbind=0.0.0.0\n',
    ],
  ];
  for (const [name, f, before, after] of table) it(name, () => expect(edit(f, before)).toBe(after));

  const refusals: [string, ConfigFileSpec, string, RegExp][] = [
    [
      'an index past the end',
      { path: 'c.json', parser: 'json', find: { 'l[3]': '1' } },
      '{"l":[1]}',
      /l has 1 element\(s\), so l\[3\] names nothing/,
    ],
    ['an index on a map', { path: 'c.yml', parser: 'yaml', find: { 'a[0]': '1' } }, 'a:\n  b: 1\n', /a is not a list/],
    ['a missing list named by [2]', { path: 'c.json', parser: 'json', find: { 'l[2].x': '1' } }, '{}', /only \[0\] creates a list/],
    ['a key under a value', { path: 'c.json', parser: 'json', find: { 'a.b': '1' } }, '{"a":"text"}', /a is a value, not a map/],
    [
      'value matching on the file parser',
      { path: 'run.sh', parser: 'file', find: { 'X=': { a: 'b' } } },
      'X=1\n',
      /value matching does not work with the file parser/,
    ],
  ];
  for (const [name, f, before, reason] of refusals)
    it(`refuses ${name}, naming the path`, () => expect(() => edit(f, before)).toThrow(reason));
});

describe('configKeyProblem: what the importer and the catalog keep', () => {
  const table: [string, ConfigParser, string, string | Record<string, string>, RegExp | undefined][] = [
    ['a yaml path with an index and a wildcard', 'yaml', 'a[0].*.b', '1', undefined],
    ['value matching on json', 'json', 'a.*', { 'regex:^x$': 'y' }, undefined],
    ['value matching on xml', 'xml', 'a.b', { x: 'y' }, /works with the yaml, json, toml, properties, ini parsers only/],
    ['a wildcard in an ini key', 'ini', 'a.*', '1', /wildcard and array paths work with the yaml, json, toml parsers only/],
    ['a broken path', 'json', 'a..b', '1', /"" is not a path segment/],
    ['a regex JavaScript cannot compile', 'yaml', 'a', { 'regex:(?<x': 'y' }, /does not compile in JavaScript/],
    ['an unknown reference', 'json', 'a', '{{server.uuid}}', /refers to \{\{server\.uuid\}\}/],
    ['a literal star in a properties key is a name', 'properties', 'a*b', '1', undefined],
  ];
  for (const [name, parser, key, value, want] of table) {
    it(name, () => {
      const problem = configKeyProblem(parser, key, value);
      if (want === undefined) expect(problem).toBeUndefined();
      else expect(problem).toMatch(want);
    });
  }
});
