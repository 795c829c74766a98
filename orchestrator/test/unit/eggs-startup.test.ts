import { describe, expect, it } from 'vitest';
import { commandReferences, renderStartup, startupCommand, splitWords } from '../../src/eggs/startup.js';
import { mapStop } from '../../src/eggs/stop.js';

describe('startupCommand: an egg startup line becomes argv without a shell when it can', () => {
  const table: [string, { argv: string[]; shell: boolean } | undefined][] = [
    ['java -Xms128M -Xmx{{SERVER_MEMORY}}M -jar {{SERVER_JARFILE}}', { argv: ['java', '-Xms128M', '-Xmx{{SERVER_MEMORY}}M', '-jar', '{{SERVER_JARFILE}}'], shell: false }],
    ['./server --motd "{{MOTD}} here" --port ${SERVER_PORT}', { argv: ['./server', '--motd', '{{MOTD}} here', '--port', '${SERVER_PORT}'], shell: false }],
    ["echo 'a && b'", { argv: ['echo', 'a && b'], shell: false }],
    ['./a && ./b {{X}}', { argv: ['/bin/sh', '-c', './a && ./b "$X"'], shell: true }],
    ['java $( [ -f x ] && echo y ) -jar ${JAR}', { argv: ['/bin/sh', '-c', 'java $( [ -f x ] && echo y ) -jar "$JAR"'], shell: true }],
    ['"unclosed', { argv: ['/bin/sh', '-c', '"unclosed'], shell: true }],
    ['   ', undefined],
  ];
  for (const [line, expected] of table) it(JSON.stringify(line), () => expect(startupCommand(line)).toEqual(expected));
});

describe('renderStartup: {{VAR}} and ${VAR} filled from the instance', () => {
  it('substitutes both forms, per argument, never splitting a value', () => {
    const argv = ['java', '-Xmx{{SERVER_MEMORY}}M', '-jar', '{{ SERVER_JARFILE }}', '--motd', '${MOTD}'];
    expect(renderStartup(argv, { SERVER_MEMORY: '1024', SERVER_JARFILE: 'server.jar', MOTD: 'a b; rm -rf /' }))
      .toEqual(['java', '-Xmx1024M', '-jar', 'server.jar', '--motd', 'a b; rm -rf /']);
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
    expect(mapStop('stop', { port: 25575, passwordVariable: 'RCON_PASS' })).toMatchObject({ ok: true, rcon: { port: 25575, passwordVariable: 'RCON_PASS', command: 'stop' } });
  });
});
