// `{{…}}` references of egg config-file values, pure and dependency-free (the
// catalog rules use it, and ectl bundles those): what an instance resolves.

export const REFERENCE = /\{\{\s*([A-Za-z0-9_.]+)\s*\}\}/g;

/** What references resolve from: the instance as its container sees it. */
export interface ConfigContext {
  port: number;
  ip: string;
  memoryMb: number;
  env: Readonly<Record<string, string>>;
}

/** The value of one reference, or undefined when it names nothing this can resolve. */
export function resolveReference(ref: string, ctx: ConfigContext): string | undefined {
  switch (ref) {
    case 'server.build.default.port':
    case 'server.allocations.default.port':
      return String(ctx.port);
    case 'server.build.default.ip':
    case 'server.allocations.default.ip':
      return ctx.ip;
    case 'server.build.memory':
    case 'server.build.memory_limit':
      return String(ctx.memoryMb);
    // Wings' own address on the Docker network (BungeeCord's servers); here the address the instance is given.
    case 'config.docker.interface':
      return ctx.ip;
  }
  const env = ENV_REFERENCE.exec(ref);
  if (env) return ctx.env[env[1] as string] ?? '';
  return undefined;
}

/** Pterodactyl's `server.build.env.X` and `env.X`; Pelican's `server.environment.X` (its importer rewrites the former into it). */
const ENV_REFERENCE = /^(?:server\.build\.env|server\.build\.environment|server\.environment|env)\.([A-Za-z_][A-Za-z0-9_]*)$/;

/**
 * The environment variable a dotted reference stands for in a startup line the
 * image's entrypoint fills from the environment (it knows only `{{NAME}}`):
 * the address → SERVER_IP, the port → SERVER_PORT, the memory → SERVER_MEMORY,
 * `env.X` and its spellings → X; undefined for anything else.
 */
export function referenceVariable(ref: string): string | undefined {
  switch (ref) {
    case 'server.build.default.port':
    case 'server.allocations.default.port':
      return 'SERVER_PORT';
    case 'server.build.default.ip':
    case 'server.allocations.default.ip':
    case 'config.docker.interface':
      return 'SERVER_IP';
    case 'server.build.memory':
    case 'server.build.memory_limit':
      return 'SERVER_MEMORY';
  }
  return ENV_REFERENCE.exec(ref)?.[1];
}

/** References a value uses that resolveReference does not know (checked at import). */
export function unknownReferences(value: string): string[] {
  const probe: ConfigContext = { port: 1, ip: '0.0.0.0', memoryMb: 1, env: {} };
  return [...value.matchAll(REFERENCE)].map((m) => m[1] as string).filter((r) => resolveReference(r, probe) === undefined);
}
