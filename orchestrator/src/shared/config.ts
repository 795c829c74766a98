// Helpers for parsing configuration from an environment map. Each entry point
// has its own config module that calls these once at start, collects the
// result into a frozen object and injects it. A bad value throws ConfigError
// whose message is one line naming the variable.

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`${variable}: ${problem}`);
    this.name = 'ConfigError';
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses `<integer><ms|s|m|h|d>` into milliseconds. A bare number is an error. */
export function parseDuration(value: string): number {
  const match = /^(\d+)(ms|s|m|h|d)$/.exec(value.trim());
  if (!match) throw new Error(`"${value}" is not a duration (an integer followed by ms, s, m, h or d, e.g. 10s)`);
  const amount = Number(match[1]);
  const ms = amount * DURATION_UNITS[match[2] as string]!;
  if (!Number.isSafeInteger(ms)) throw new Error(`"${value}" is too large`);
  return ms;
}

export interface PortRange {
  first: number;
  last: number;
}

export function parsePort(value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new Error(`"${value}" is not a port number`);
  const port = Number(value);
  if (port < 1 || port > 65535) throw new Error(`${port} is outside 1-65535`);
  return port;
}

/** Parses an inclusive `first-last` port range. */
export function parsePortRange(value: string): PortRange {
  const match = /^\s*(\d+)\s*-\s*(\d+)\s*$/.exec(value);
  if (!match) throw new Error(`"${value}" is not a port range (inclusive first-last, e.g. 25565-25664)`);
  const first = parsePort(match[1]!);
  const last = parsePort(match[2]!);
  if (first > last) throw new Error(`range ${first}-${last} is empty (first is greater than last)`);
  return { first, last };
}

export function parseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`"${value}" is not an absolute URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`"${value}" must be http or https`);
  return value.replace(/\/+$/, '');
}

export function parseBoolean(value: string): boolean {
  const v = value.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new Error(`"${value}" is not a boolean (true/false)`);
}

export function parsePositiveInt(value: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) <= 0) throw new Error(`"${value}" is not a positive integer`);
  return Number(value);
}

/** Parses a byte size such as `512MiB`, `2GiB`, `1048576`. */
export function parseByteSize(value: string): number {
  const match = /^(\d+)\s*(B|KiB|MiB|GiB|TiB)?$/.exec(value.trim());
  if (!match) throw new Error(`"${value}" is not a size (an integer with optional B, KiB, MiB, GiB or TiB)`);
  const mult: Record<string, number> = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4 };
  return Number(match[1]) * mult[match[2] ?? 'B']!;
}

/** Minimum length of a shared secret (agent token, preset admin token). */
export const MIN_SECRET_LENGTH = 16;

/**
 * A shared secret: no whitespace, at least MIN_SECRET_LENGTH characters. The
 * value is never echoed in the error.
 */
export function parseSecret(value: string): string {
  if (/\s/.test(value)) throw new Error('must not contain whitespace');
  if (value.length < MIN_SECRET_LENGTH)
    throw new Error(`must be at least ${MIN_SECRET_LENGTH} characters (generate one: openssl rand -hex 32)`);
  return value;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function parseLogLevel(value: string): LogLevel {
  const v = value.trim().toLowerCase();
  if (!(LOG_LEVELS as readonly string[]).includes(v)) throw new Error(`"${value}" is not one of ${LOG_LEVELS.join(', ')}`);
  return v as LogLevel;
}

/**
 * Reads variables from an env map; each accessor names the variable in its
 * ConfigError. Empty strings count as unset.
 */
export class EnvReader {
  constructor(private readonly env: Env) {}

  raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v;
  }

  required<T>(name: string, parse: (v: string) => T): T {
    const v = this.raw(name);
    if (v === undefined) throw new ConfigError(name, 'is required but not set');
    return this.apply(name, v, parse);
  }

  optional<T>(name: string, parse: (v: string) => T): T | undefined;
  optional<T>(name: string, parse: (v: string) => T, fallback: T): T;
  optional<T>(name: string, parse: (v: string) => T, fallback?: T): T | undefined {
    const v = this.raw(name);
    if (v === undefined) return fallback;
    return this.apply(name, v, parse);
  }

  private apply<T>(name: string, value: string, parse: (v: string) => T): T {
    try {
      return parse(value);
    } catch (err) {
      throw new ConfigError(name, err instanceof Error ? err.message : String(err));
    }
  }
}

export const asString = (v: string): string => v;

/** Deep-freezes a config object so nothing mutates it after start. */
export function freeze<T>(value: T): Readonly<T> {
  if (value && typeof value === 'object') {
    for (const key of Object.keys(value)) freeze((value as Record<string, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

/**
 * Runs an entry point's config loader; on ConfigError prints one line and
 * exits with status 2, so a bad value never reaches the running service.
 */
export function loadOrExit<T>(load: () => T, program: string): T {
  try {
    return load();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${program}: invalid configuration: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}
