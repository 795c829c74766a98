// Entry point of the Minecraft-protocol test server: startup (optionally slow
// or never ready), the once-a-second tick file, saves, graceful stop on SIGTERM
// or RCON `stop`, and the misbehaviours tests ask for through env vars.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCommand } from './commands.js';
import { loadServerConfig, type ServerConfig } from './config.js';
import { GameServer, type OnlinePlayer } from './game-server.js';
import { RconServer } from './rcon-server.js';
import { WorldStore, type Level, type PlayerRecord } from './world-store.js';

/** Vanilla-shaped log lines, so log-based readiness probes written for itzg images match. */
function log(message: string, level: 'INFO' | 'WARN' | 'ERROR' = 'INFO'): void {
  const time = new Date().toISOString().slice(11, 19);
  process.stdout.write(`[${time}] [Server thread/${level}]: ${message}\n`);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class TestServer {
  private readonly store: WorldStore;
  private level!: Level;
  private game: GameServer | undefined;
  private rcon: RconServer | undefined;
  private ready = false;
  private stopping = false;
  private readonly startedAt = Date.now();
  private ticker: NodeJS.Timeout | undefined;

  constructor(private readonly config: Readonly<ServerConfig>) {
    this.store = new WorldStore(config.dataDir);
  }

  async start(): Promise<void> {
    const c = this.config;
    log(`Starting minecraft server version ${c.version}`);
    this.installSignalHandlers();
    if (c.crashAfterMs !== undefined) setTimeout(() => this.crash(), c.crashAfterMs);

    const { staleLock } = this.store.open();
    if (staleLock) log('session.lock was left by a previous run that did not stop cleanly', 'WARN');
    const { level, created } = this.store.loadOrCreateLevel(c.version, c.levelSeed);
    this.level = level;
    log(created ? `Creating level "world" with seed ${level.seed}` : `Loading level "world" (seed ${level.seed})`);
    this.ticker = setInterval(() => this.writeTicks(), 1000);
    this.writeTicks();

    log(`Starting Minecraft server on *:${c.serverPort}`);
    if (c.startupDelayMs > 0) await this.prepareSpawnArea(c.startupDelayMs);
    if (this.stopping) return;
    if (c.neverReady === 'listen') {
      log('Preparing spawn area: 0% (NEVER_READY=listen: the game port will never open)');
      return;
    }
    await this.openGamePort();
    await this.startRcon();
    if (c.neverReady === 'status') {
      log('NEVER_READY=status: answering status with players.max = 0 forever', 'WARN');
      return;
    }
    this.ready = true;
    log(`Done (${((Date.now() - this.startedAt) / 1000).toFixed(3)}s)! For help, type "help"`);
  }

  private async prepareSpawnArea(delayMs: number): Promise<void> {
    const steps = Math.max(1, Math.min(10, Math.floor(delayMs / 500)));
    for (let i = 0; i < steps && !this.stopping; i++) {
      log(`Preparing spawn area: ${Math.floor((i * 100) / steps)}%`);
      await sleep(delayMs / steps);
    }
  }

  private async openGamePort(): Promise<void> {
    const c = this.config;
    this.game = new GameServer({
      port: c.serverPort,
      version: c.version,
      motd: c.motdFromEnv ? c.motd : (propertiesMotd(c.dataDir) ?? c.motd),
      maxPlayers: c.maxPlayers,
      acceptsTransfers: c.acceptsTransfers,
      spawn: this.level.spawn,
      isReady: () => this.ready && !this.stopping,
      log,
      onJoin: (p) => this.savePlayer(p, true),
      onLeave: (p) => this.savePlayer(p, false),
    });
    await this.game.listen();
  }

  private async startRcon(): Promise<void> {
    const { rcon } = this.config;
    if (!rcon.enabled) return;
    if (!rcon.password) {
      log('RCON is enabled but RCON_PASSWORD is empty: not starting RCON', 'WARN');
      return;
    }
    this.rcon = new RconServer({
      port: rcon.port,
      password: rcon.password,
      log,
      run: (line) =>
        runCommand(line, {
          maxPlayers: this.config.maxPlayers,
          playerNames: () => [...(this.game?.players.values() ?? [])].map((p) => p.name),
          saveAll: () => this.saveAll(),
          stop: () => {
            if (this.config.ignoreStop) {
              log('Ignoring the stop command (IGNORE_STOP)', 'WARN');
              return false;
            }
            void this.stop('stop command');
            return true;
          },
          say: (message) => {
            log(`[Server] ${message}`);
            this.game?.say(message);
          },
          transfer: (host, port, target) => this.game?.transfer(host, port, target) ?? { error: 'No player was found' },
        }),
    });
    await this.rcon.listen();
  }

  private savePlayer(p: OnlinePlayer, joining: boolean): void {
    const now = new Date().toISOString();
    const prior: PlayerRecord | undefined = this.store.loadPlayer(p.uuid);
    const record: PlayerRecord = {
      uuid: p.uuid,
      name: p.name,
      position: prior?.position ?? { ...this.level.spawn },
      firstJoinedAt: prior?.firstJoinedAt ?? now,
      lastJoinedAt: joining ? now : (prior?.lastJoinedAt ?? now),
      lastLeftAt: joining ? (prior?.lastLeftAt ?? null) : now,
      joins: (prior?.joins ?? 0) + (joining ? 1 : 0),
      online: joining,
      transferred: p.transferred,
    };
    this.store.savePlayer(record);
  }

  private saveAll(): void {
    log('Saving the game (this may take a moment!)');
    for (const p of this.game?.players.values() ?? []) {
      const prior = this.store.loadPlayer(p.uuid);
      if (prior) this.store.savePlayer({ ...prior, name: p.name, online: !this.stopping });
    }
    this.level = this.store.saveLevel(this.level);
    this.writeTicks();
    log('Saved the game');
  }

  private writeTicks(): void {
    const uptimeMs = Date.now() - this.startedAt;
    this.store.saveTicks({
      ticks: Math.floor(uptimeMs / 50),
      uptimeSeconds: Math.floor(uptimeMs / 1000),
      playersOnline: this.game?.players.size ?? 0,
      updatedAt: new Date().toISOString(),
    });
  }

  /** Graceful stop: kick players, save everything, release the lock, exit 0. */
  async stop(reason: string): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    log(`Stopping the server (${reason})`);
    clearInterval(this.ticker);
    log('Saving players');
    this.saveAll();
    await this.game?.close();
    await this.rcon?.close();
    log('Saving worlds');
    if (this.config.stopDelayMs > 0) await sleep(this.config.stopDelayMs);
    this.level = this.store.saveLevel(this.level);
    log('ThreadedAnvilChunkStorage: All dimensions are saved');
    this.store.close();
    log('Server stopped');
    process.exit(0);
  }

  private crash(): void {
    log(`Crashing on purpose (CRASH_AFTER_SECONDS), exit code ${this.config.exitCode}`, 'ERROR');
    // A crash saves nothing and keeps session.lock, like a real one.
    process.exit(this.config.exitCode);
  }

  private installSignalHandlers(): void {
    process.on('SIGTERM', () => {
      if (this.config.ignoreSigterm) {
        log('Ignoring SIGTERM (IGNORE_SIGTERM)', 'WARN');
        return;
      }
      void this.stop('SIGTERM');
    });
    process.on('SIGINT', () => void this.stop('SIGINT'));
  }
}

const config = (() => {
  try {
    return loadServerConfig();
  } catch (err) {
    process.stderr.write(`mc-server: invalid configuration: ${(err as Error).message}\n`);
    process.exit(2);
  }
})();

new TestServer(config).start().catch((err: unknown) => {
  log(`Failed to start the server: ${(err as Error).stack ?? String(err)}`, 'ERROR');
  process.exit(1);
});

/** `motd=` of <dataDir>/server.properties, read at start like a real server does (unescaped only for \\ and \\uXXXX). */
function propertiesMotd(dataDir: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(join(dataDir, 'server.properties'), 'utf8');
  } catch {
    return undefined;
  }
  const line = text.split(/\r?\n/).find((l) => /^\s*motd\s*[=:]/.test(l));
  if (line === undefined) return undefined;
  return line
    .replace(/^\s*motd\s*[=:]\s*/, '')
    .replace(/\\u([0-9a-fA-F]{4})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
    .replace(/\\(.)/g, '$1');
}
