import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../../src/agent/config.js';
import { isLoopbackAddress } from '../../src/shared/http.js';
import { ConfigError } from '../../src/shared/config.js';

const facts = { hostname: 'node-7', platform: 'linux' as NodeJS.Platform };
const base = { AGENT_ID: 'host-1', AGENT_ORCHESTRATOR_URL: 'http://orchestrator:8080/' };

function errorOf(env: Record<string, string>): ConfigError {
  try {
    loadAgentConfig(env, facts);
  } catch (err) {
    return err as ConfigError;
  }
  throw new Error('expected a ConfigError');
}

describe('loadAgentConfig', () => {
  it('applies the documented defaults', () => {
    const c = loadAgentConfig(base, facts);
    expect(c).toMatchObject({
      agentId: 'host-1',
      orchestratorUrl: 'http://orchestrator:8080',
      listenAddress: '0.0.0.0',
      port: 8081,
      controlUrl: 'http://node-7:8081',
      gameAddress: 'node-7',
      gameBindAddress: '0.0.0.0',
      timezone: 'UTC',
      portRange: { first: 30000, last: 30099 },
      runtimeDirectory: '/var/lib/endercloud/runtime',
      runtimeHostDirectory: '/var/lib/endercloud/runtime',
      cacheDirectory: '/var/lib/endercloud/cache',
      dockerSocket: '/var/run/docker.sock',
      dockerNetwork: 'endercloud',
      heartbeatIntervalMs: 10_000,
      stopTimeoutMs: 30_000,
      token: undefined,
      logLevel: 'info',
      maxArchiveBytes: 1024 ** 3,
      maxLayerBytes: 4 * 1024 ** 3,
    });
  });

  it('parses every variable when set', () => {
    const c = loadAgentConfig(
      {
        ...base,
        AGENT_LISTEN_ADDRESS: '127.0.0.1',
        AGENT_PORT: '9001',
        AGENT_CONTROL_URL: 'https://agent.example:9001',
        AGENT_GAME_ADDRESS: 'play.example.net',
        AGENT_GAME_BIND_ADDRESS: '10.0.0.5',
        AGENT_GAME_PORT_RANGE: '30000-30009',
        AGENT_RUNTIME_DIRECTORY: '/srv/runtime/',
        AGENT_RUNTIME_HOST_DIRECTORY: '/run/desktop/mnt/host/c/EnderCloud/runtime',
        AGENT_CACHE_DIRECTORY: '/srv/cache',
        AGENT_DOCKER_SOCKET: '/run/docker.sock',
        AGENT_DOCKER_NETWORK: 'games',
        AGENT_HEARTBEAT_INTERVAL: '500ms',
        AGENT_STOP_TIMEOUT: '2m',
        AGENT_TOKEN: 's3cret-0123456789abcdef',
        AGENT_LOG_LEVEL: 'DEBUG',
        AGENT_MAX_ARCHIVE_SIZE: '64MiB',
        AGENT_MAX_LAYER_SIZE: '1GiB',
        AGENT_LAYER_DOWNLOAD_TIMEOUT: '30s',
      },
      facts,
    );
    expect(c).toMatchObject({
      listenAddress: '127.0.0.1',
      port: 9001,
      controlUrl: 'https://agent.example:9001',
      gameAddress: 'play.example.net',
      gameBindAddress: '10.0.0.5',
      portRange: { first: 30000, last: 30009 },
      runtimeDirectory: '/srv/runtime',
      runtimeHostDirectory: '/run/desktop/mnt/host/c/EnderCloud/runtime',
      cacheDirectory: '/srv/cache',
      dockerSocket: '/run/docker.sock',
      dockerNetwork: 'games',
      heartbeatIntervalMs: 500,
      stopTimeoutMs: 120_000,
      token: 's3cret-0123456789abcdef',
      logLevel: 'debug',
      maxArchiveBytes: 64 * 1024 ** 2,
      maxLayerBytes: 1024 ** 3,
      layerDownloadTimeoutMs: 30_000,
    });
  });

  it("AGENT_TIMEZONE (the TZ of egg servers): set, else the machine's zone, else UTC", () => {
    expect(loadAgentConfig({ ...base, AGENT_TIMEZONE: 'America/Argentina/Buenos_Aires' }, facts).timezone).toBe(
      'America/Argentina/Buenos_Aires',
    );
    expect(loadAgentConfig(base, { ...facts, timezone: 'Europe/Berlin' }).timezone).toBe('Europe/Berlin');
    expect(loadAgentConfig(base, { ...facts, timezone: 'not a zone' }).timezone).toBe('UTC');
  });

  it('derives the control URL from AGENT_PORT and the runtime host directory from the runtime directory', () => {
    const c = loadAgentConfig({ ...base, AGENT_PORT: '9100', AGENT_RUNTIME_DIRECTORY: '/x/rt' }, facts);
    expect(c.controlUrl).toBe('http://node-7:9100');
    expect(c.runtimeHostDirectory).toBe('/x/rt');
  });

  it('defaults the Docker socket by OS', () => {
    expect(loadAgentConfig(base, { hostname: 'w', platform: 'win32' }).dockerSocket).toBe('//./pipe/docker_engine');
  });

  it('returns a frozen object', () => {
    const c = loadAgentConfig(base, facts);
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.portRange)).toBe(true);
  });

  it.each([
    [{ AGENT_ORCHESTRATOR_URL: 'http://o' }, 'AGENT_ID'],
    [{ AGENT_ID: 'h' }, 'AGENT_ORCHESTRATOR_URL'],
    [{ ...base, AGENT_ID: 'Host_1' }, 'AGENT_ID'],
    [{ ...base, AGENT_ORCHESTRATOR_URL: 'ftp://o' }, 'AGENT_ORCHESTRATOR_URL'],
    [{ ...base, AGENT_PORT: '70000' }, 'AGENT_PORT'],
    [{ ...base, AGENT_LISTEN_ADDRESS: 'everywhere' }, 'AGENT_LISTEN_ADDRESS'],
    [{ ...base, AGENT_GAME_BIND_ADDRESS: 'localhost' }, 'AGENT_GAME_BIND_ADDRESS'],
    [{ ...base, AGENT_TIMEZONE: 'Europe/Berlin; rm' }, 'AGENT_TIMEZONE'],
    [{ ...base, AGENT_GAME_ADDRESS: 'not a host' }, 'AGENT_GAME_ADDRESS'],
    [{ ...base, AGENT_GAME_PORT_RANGE: '25565' }, 'AGENT_GAME_PORT_RANGE'],
    [{ ...base, AGENT_GAME_PORT_RANGE: '2-1' }, 'AGENT_GAME_PORT_RANGE'],
    [{ ...base, AGENT_RUNTIME_DIRECTORY: 'relative/dir' }, 'AGENT_RUNTIME_DIRECTORY'],
    [{ ...base, AGENT_DOCKER_NETWORK: 'bad name' }, 'AGENT_DOCKER_NETWORK'],
    [{ ...base, AGENT_HEARTBEAT_INTERVAL: '10' }, 'AGENT_HEARTBEAT_INTERVAL'],
    [{ ...base, AGENT_HEARTBEAT_INTERVAL: '0s' }, 'AGENT_HEARTBEAT_INTERVAL'],
    [{ ...base, AGENT_STOP_TIMEOUT: '30' }, 'AGENT_STOP_TIMEOUT'],
    [{ ...base, AGENT_LOG_LEVEL: 'loud' }, 'AGENT_LOG_LEVEL'],
    [{ ...base, AGENT_MAX_ARCHIVE_SIZE: '1.5GiB' }, 'AGENT_MAX_ARCHIVE_SIZE'],
    [{ ...base, AGENT_MAX_LAYER_SIZE: '0' }, 'AGENT_MAX_LAYER_SIZE'],
    [{ ...base, AGENT_TOKEN: 'has space' }, 'AGENT_TOKEN'],
    [{ ...base, AGENT_TOKEN: 'short' }, 'AGENT_TOKEN'],
  ])('a bad value stops with one line naming the variable (%j)', (env, variable) => {
    const err = errorOf(env);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.variable).toBe(variable);
    expect(err.message.startsWith(`${variable}: `)).toBe(true);
    expect(err.message).not.toContain('\n');
  });

  it('never echoes the token in an error', () => {
    expect(errorOf({ ...base, AGENT_TOKEN: 'top secret' }).message).not.toContain('top secret');
    expect(errorOf({ ...base, AGENT_TOKEN: 'tiny' }).message).not.toContain('tiny');
  });
});

describe('isLoopbackAddress', () => {
  it.each([
    ['127.0.0.1', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['0.0.0.0', false],
    ['::ffff:10.1.2.3', false],
    ['10.1.2.3', false],
  ])('%s → %s', (address, loopback) => expect(isLoopbackAddress(address)).toBe(loopback));
});
