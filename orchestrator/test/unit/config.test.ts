import { describe, expect, it } from 'vitest';
import { ConfigError, EnvReader, parseByteSize, parseDuration, parsePortRange } from '../../src/shared/config.js';

describe('parseDuration', () => {
  it.each([
    ['250ms', 250],
    ['10s', 10_000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['1d', 86_400_000],
  ])('parses %s', (input, ms) => expect(parseDuration(input)).toBe(ms));

  it.each(['10', '', 's', '1.5s', '-1s', '10 seconds', '10S'])('refuses %j', (input) => {
    expect(() => parseDuration(input)).toThrow(/duration/);
  });
});

describe('parsePortRange', () => {
  it('parses an inclusive range', () => expect(parsePortRange('25565-25664')).toEqual({ first: 25565, last: 25664 }));
  it('accepts a single-port range', () => expect(parsePortRange('30000-30000')).toEqual({ first: 30000, last: 30000 }));
  it.each(['25565', '2-1', '0-10', '1-70000', 'a-b'])('refuses %j', (input) => {
    expect(() => parsePortRange(input)).toThrow();
  });
});

describe('parseByteSize', () => {
  it.each([
    ['1024', 1024],
    ['512MiB', 512 * 1024 ** 2],
    ['2GiB', 2 * 1024 ** 3],
  ])('parses %s', (input, bytes) => expect(parseByteSize(input)).toBe(bytes));
  it('refuses 1.5GiB', () => expect(() => parseByteSize('1.5GiB')).toThrow());
});

describe('EnvReader', () => {
  it('names the variable in a one-line error', () => {
    const env = new EnvReader({ AGENT_HEARTBEAT_INTERVAL: '10' });
    let error: unknown;
    try {
      env.optional('AGENT_HEARTBEAT_INTERVAL', parseDuration, 10_000);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^AGENT_HEARTBEAT_INTERVAL: /);
    expect((error as Error).message).not.toContain('\n');
  });

  it('treats empty strings as unset', () => {
    expect(new EnvReader({ X: '  ' }).optional('X', (v) => v, 'default')).toBe('default');
    expect(() => new EnvReader({ X: '' }).required('X', (v) => v)).toThrow(/X: is required/);
  });
});
