// The test server's files under /data: the level (created once, with seed and
// spawn), one file per player, a tick counter rewritten every second, and a
// session lock held while the server runs. Writes go through a temp file and a
// rename, so a kill never leaves a half-written JSON file behind.

import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface Level {
  name: string;
  seed: string;
  spawn: { x: number; y: number; z: number };
  version: string;
  createdAt: string;
  lastSavedAt: string | null;
  saves: number;
}

export interface PlayerRecord {
  uuid: string;
  name: string;
  position: { x: number; y: number; z: number };
  firstJoinedAt: string;
  lastJoinedAt: string;
  lastLeftAt: string | null;
  joins: number;
  online: boolean;
  /** True when the last login arrived with handshake intent 3 (transfer). */
  transferred: boolean;
}

export interface TickStats {
  ticks: number;
  uptimeSeconds: number;
  playersOnline: number;
  updatedAt: string;
}

export class WorldStore {
  private lockFd: number | undefined;

  constructor(
    private readonly dir: string,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Creates the directories and takes the session lock; says whether a stale lock was found. */
  open(): { staleLock: boolean } {
    for (const sub of ['', 'playerdata', 'stats']) mkdirSync(join(this.dir, sub), { recursive: true });
    const lockPath = join(this.dir, 'session.lock');
    const staleLock = existsSync(lockPath);
    // Vanilla writes a snowman into session.lock; the open descriptor is the "hold".
    writeFileSync(lockPath, `\u2603 pid ${process.pid} since ${this.now().toISOString()}\n`);
    this.lockFd = openSync(lockPath, 'r');
    return { staleLock };
  }

  /** Releases the lock; only a clean shutdown removes the file, so a crash leaves it behind. */
  close(): void {
    if (this.lockFd !== undefined) closeSync(this.lockFd);
    this.lockFd = undefined;
    rmSync(join(this.dir, 'session.lock'), { force: true });
  }

  /** Reads level.json, creating it on first start. */
  loadOrCreateLevel(version: string, seed: string | undefined): { level: Level; created: boolean } {
    const path = join(this.dir, 'level.json');
    if (existsSync(path)) return { level: JSON.parse(readFileSync(path, 'utf8')) as Level, created: false };
    const level: Level = {
      name: 'world',
      seed: seed ?? BigInt.asIntN(64, BigInt(`0x${randomBytes(8).toString('hex')}`)).toString(),
      spawn: { x: 0, y: 100, z: 0 },
      version,
      createdAt: this.now().toISOString(),
      lastSavedAt: null,
      saves: 0,
    };
    this.writeJson('level.json', level);
    return { level, created: true };
  }

  saveLevel(level: Level): Level {
    const saved = { ...level, lastSavedAt: this.now().toISOString(), saves: level.saves + 1 };
    this.writeJson('level.json', saved);
    return saved;
  }

  loadPlayer(uuid: string): PlayerRecord | undefined {
    const path = join(this.dir, 'playerdata', `${safeUuid(uuid)}.json`);
    return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as PlayerRecord) : undefined;
  }

  savePlayer(record: PlayerRecord): void {
    this.writeJson(join('playerdata', `${safeUuid(record.uuid)}.json`), record);
  }

  saveTicks(stats: TickStats): void {
    this.writeJson(join('stats', 'ticks.json'), stats);
  }

  private writeJson(relative: string, value: unknown): void {
    const path = join(this.dir, relative);
    const tmp = `${path}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`);
    renameSync(tmp, path);
  }
}

/** Player UUIDs come from the protocol library; refuse anything that is not one before using it as a file name. */
function safeUuid(uuid: string): string {
  if (!/^[0-9a-f-]{32,36}$/i.test(uuid)) throw new Error(`refusing player id ${JSON.stringify(uuid)} as a file name`);
  return uuid.toLowerCase();
}
