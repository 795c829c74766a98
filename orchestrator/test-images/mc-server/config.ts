// Configuration of the Minecraft-protocol test server, read once from the
// container's environment (itzg/minecraft-server names where they exist).
// docs/test-server.md lists every variable.

import { EnvReader, asString, freeze, parseBoolean, parsePort, parsePositiveInt, type Env } from '../../src/shared/config.js';

/** Minecraft versions whose protocol data is bundled into the image (see build.ts). */
export const BUNDLED_VERSIONS = ['1.21.1', '1.20.6'] as const;
export type BundledVersion = (typeof BUNDLED_VERSIONS)[number];
export const DEFAULT_VERSION: BundledVersion = '1.21.1';

/**
 * `status`: listens and answers pings with players.max = 0 (not ready) forever;
 * `listen`: never opens the game port.
 */
export type NeverReadyMode = 'off' | 'status' | 'listen';

export interface ServerConfig {
  dataDir: string;
  serverPort: number;
  maxPlayers: number;
  motd: string;
  /** MOTD came from the environment; otherwise `motd=` in <dataDir>/server.properties wins, as it does for a real server. */
  motdFromEnv: boolean;
  version: BundledVersion;
  levelSeed: string | undefined;
  acceptsTransfers: boolean;
  rcon: { enabled: boolean; port: number; password: string | undefined };
  startupDelayMs: number;
  stopDelayMs: number;
  crashAfterMs: number | undefined;
  exitCode: number;
  neverReady: NeverReadyMode;
  ignoreSigterm: boolean;
  ignoreStop: boolean;
}

function parseSeconds(value: string): number {
  if (!/^\d+(\.\d+)?$/.test(value.trim())) throw new Error(`"${value}" is not a number of seconds`);
  return Math.round(Number(value) * 1000);
}

function parseExitCode(value: string): number {
  if (!/^\d+$/.test(value.trim()) || Number(value) > 255) throw new Error(`"${value}" is not an exit code (0-255)`);
  return Number(value);
}

function parseVersion(value: string): BundledVersion {
  const v = value.trim();
  if (!(BUNDLED_VERSIONS as readonly string[]).includes(v))
    throw new Error(`"${value}" is not bundled (one of ${BUNDLED_VERSIONS.join(', ')})`);
  return v as BundledVersion;
}

function parseNeverReady(value: string): NeverReadyMode {
  const v = value.trim().toLowerCase();
  if (v === 'status' || v === 'listen') return v;
  // A bare boolean keeps the common spelling NEVER_READY=true working.
  return parseBoolean(v) ? 'status' : 'off';
}

export function loadServerConfig(env: Env = process.env): Readonly<ServerConfig> {
  const r = new EnvReader(env);
  return freeze({
    // The working directory: /data (the image's WORKDIR), /home/container under Wings' layout; the root filesystem is read-only.
    dataDir: r.optional('DATA_DIR', asString, process.cwd()),
    serverPort: r.optional('SERVER_PORT', parsePort, 25565),
    maxPlayers: r.optional('MAX_PLAYERS', parsePositiveInt, 20),
    motd: r.optional('MOTD', asString, 'An EnderCloud test server'),
    motdFromEnv: env.MOTD !== undefined,
    version: r.optional('VERSION', parseVersion, DEFAULT_VERSION),
    levelSeed: r.optional('LEVEL_SEED', asString),
    acceptsTransfers: r.optional('ACCEPTS_TRANSFERS', parseBoolean, true),
    rcon: {
      enabled: r.optional('ENABLE_RCON', parseBoolean, true),
      port: r.optional('RCON_PORT', parsePort, 25575),
      password: r.optional('RCON_PASSWORD', asString),
    },
    startupDelayMs: r.optional('STARTUP_DELAY_SECONDS', parseSeconds, 0),
    stopDelayMs: r.optional('STOP_DELAY_SECONDS', parseSeconds, 0),
    crashAfterMs: r.optional('CRASH_AFTER_SECONDS', parseSeconds),
    exitCode: r.optional('EXIT_CODE', parseExitCode, 1),
    neverReady: r.optional('NEVER_READY', parseNeverReady, 'off'),
    ignoreSigterm: r.optional('IGNORE_SIGTERM', parseBoolean, false),
    ignoreStop: r.optional('IGNORE_STOP', parseBoolean, false),
  });
}
