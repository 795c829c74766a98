import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import {
  commandReferences,
  entrypointStartup,
  renderStartup,
  startupCommand,
  splitWords,
  unknownStartupReferences,
} from '../../src/eggs/startup.js';
import { mapStop } from '../../src/eggs/stop.js';

describe('startupCommand: an egg startup line becomes argv without a shell when it can', () => {
  const table: [string, { argv: string[]; shell: boolean } | undefined][] = [
    [
      'java -Xms128M -Xmx{{SERVER_MEMORY}}M -jar {{SERVER_JARFILE}}',
      { argv: ['java', '-Xms128M', '-Xmx{{SERVER_MEMORY}}M', '-jar', '{{SERVER_JARFILE}}'], shell: false },
    ],
    [
      './server --motd "{{MOTD}} here" --port ${SERVER_PORT}',
      { argv: ['./server', '--motd', '{{MOTD}} here', '--port', '${SERVER_PORT}'], shell: false },
    ],
    ["echo 'a && b'", { argv: ['echo', 'a && b'], shell: false }],
    ['./a && ./b {{X}}', { argv: ['/bin/sh', '-c', './a && ./b "${X}"'], shell: true }],
    ['java $( [ -f x ] && echo y ) -jar ${JAR}', { argv: ['/bin/sh', '-c', 'java $( [ -f x ] && echo y ) -jar "${JAR}"'], shell: true }],
    // A reference inside quotes stays inside them: one word, whatever the value holds.
    [
      './arma3server -mod="{{MODS}}" -port={{SERVER_PORT}} 2>&1',
      { argv: ['/bin/sh', '-c', './arma3server -mod="${MODS}" -port="${SERVER_PORT}" 2>&1'], shell: true },
    ],
    ['./srv -mod="@a;{{MODS}} x" && echo "{{ X }}"', { argv: ['/bin/sh', '-c', './srv -mod="@a;${MODS} x" && echo "${X}"'], shell: true }],
    ["./srv --name '{{NAME}}' | tee log", { argv: ['/bin/sh', '-c', "./srv --name ''\"${NAME}\"'' | tee log"], shell: true }],
    ['./srv "a \\" {{X}}" ; {{Y}}', { argv: ['/bin/sh', '-c', './srv "a \\" ${X}" ; "${Y}"'], shell: true }],
    ['./srv -mod="{{MODS}}"', { argv: ['./srv', '-mod={{MODS}}'], shell: false }],
    ['"unclosed', { argv: ['/bin/sh', '-c', '"unclosed'], shell: true }],
    ['   ', undefined],
  ];
  for (const [line, expected] of table) it(JSON.stringify(line), () => expect(startupCommand(line)).toEqual(expected));

  it('the shell line keeps a quoted value with spaces and semicolons one argument (run by a real sh)', () => {
    const cmd = startupCommand('printf "[%s]\\n" -mod="{{MODS}}" {{SERVER_PORT}} && echo end') as { argv: string[] };
    const out = execFileSync(cmd.argv[0] as string, cmd.argv.slice(1), {
      env: { PATH: process.env.PATH ?? '/bin', MODS: '@a b;@c $(x)', SERVER_PORT: '25565' },
      encoding: 'utf8',
    });
    expect(out).toBe('[-mod=@a b;@c $(x)]\n[25565]\nend\n');
  });
});

describe("entrypointStartup: STARTUP as the image's entrypoint expects it", () => {
  const table: [string, string][] = [
    ['java -Xmx{{SERVER_MEMORY}}M -jar {{SERVER_JARFILE}}', 'java -Xmx{{SERVER_MEMORY}}M -jar {{SERVER_JARFILE}}'],
    [
      './arma3server -ip={{server.build.default.ip}} -port={{server.build.default.port}} -mod="{{MODS}}"',
      './arma3server -ip={{SERVER_IP}} -port={{SERVER_PORT}} -mod="{{MODS}}"',
    ],
    [
      './srv --bind {{ config.docker.interface }} --alloc {{server.allocations.default.ip}}:{{server.allocations.default.port}}',
      './srv --bind {{SERVER_IP}} --alloc {{SERVER_IP}}:{{SERVER_PORT}}',
    ],
    [
      './srv -m {{server.build.memory}} --motd "{{env.MOTD}} {{server.build.env.X}} {{server.environment.Y}}"',
      './srv -m {{SERVER_MEMORY}} --motd "{{MOTD}} {{X}} {{Y}}"',
    ],
    ['./srv --id {{server.uuid}}', './srv --id {{server.uuid}}'],
  ];
  for (const [line, expected] of table) it(line, () => expect(entrypointStartup(line)).toBe(expected));
  it('lists the dotted references nothing resolves', () => {
    expect(unknownStartupReferences('./srv {{server.uuid}} {{server.build.default.ip}} {{SERVER_PORT}}')).toEqual(['server.uuid']);
  });
});

describe('renderStartup: {{VAR}} and ${VAR} filled from the instance', () => {
  it('substitutes both forms, per argument, never splitting a value', () => {
    const argv = ['java', '-Xmx{{SERVER_MEMORY}}M', '-jar', '{{ SERVER_JARFILE }}', '--motd', '${MOTD}'];
    expect(renderStartup(argv, { SERVER_MEMORY: '1024', SERVER_JARFILE: 'server.jar', MOTD: 'a b; rm -rf /' })).toEqual([
      'java',
      '-Xmx1024M',
      '-jar',
      'server.jar',
      '--motd',
      'a b; rm -rf /',
    ]);
  });
  it('an unknown name becomes empty, like the shell', () => {
    expect(renderStartup(['x{{NOPE}}y'], {})).toEqual(['xy']);
  });
  it('lists references', () => {
    expect(commandReferences(['{{A}}', '${B}x{{A}}'])).toEqual(['A', 'B']);
  });
  it('splitWords keeps empty quoted words', () => {
    expect(splitWords('a "" b')).toEqual(['a', '', 'b']);
  });
});

describe('mapStop', () => {
  const table: [string | undefined, ReturnType<typeof mapStop>['ok'], Record<string, unknown>][] = [
    ['^C', true, { signal: 'SIGINT' }],
    ['^^C', true, { signal: 'SIGINT', warning: expect.stringMatching(/Ctrl-C twice.*one SIGINT.*killed after the stop timeout/) }],
    ['stop', true, { signal: 'SIGTERM', stdin: 'stop' }],
    ['end', true, { stdin: 'end' }],
    [undefined, true, { signal: 'SIGTERM' }],
    ['^X', false, { reason: expect.stringMatching(/only \^C and \^\^C/) }],
    ['a\nb', false, { reason: expect.stringMatching(/one console command/) }],
  ];
  for (const [stop, ok, fields] of table) it(JSON.stringify(stop), () => expect(mapStop(stop)).toMatchObject({ ok, ...fields }));
  it('uses RCON when the import declares it', () => {
    expect(mapStop('stop', { port: 25575, passwordVariable: 'RCON_PASS' })).toMatchObject({
      ok: true,
      rcon: { port: 25575, passwordVariable: 'RCON_PASS', command: 'stop' },
    });
  });
});
