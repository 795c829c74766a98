// Leader fencing on the agent: remembers the highest reconciler-lease epoch
// (x-leader-epoch) any orchestrator call carried and refuses a mutating call
// with an older one (STALE_LEADER), so a paused-then-resumed old leader cannot
// act. The highest epoch is persisted (file in the runtime directory) before
// the call that raised it proceeds, so a restarted agent still refuses an old
// leader. Calls without the header (a single orchestrator, API-side calls) pass.

import { readFile, rename, writeFile } from 'node:fs/promises';
import { AppError } from '../shared/errors.js';

export const EPOCH_FILE_NAME = 'leader-epoch';

/** Parses the header value: a positive safe integer, or undefined when absent; anything else is refused. */
export function parseEpochHeader(value: string | string[] | undefined): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (v === undefined || v === '') return undefined;
  if (!/^[1-9][0-9]{0,15}$/.test(v) || !Number.isSafeInteger(Number(v))) {
    throw new AppError('BAD_REQUEST', `x-leader-epoch must be a positive integer (got ${JSON.stringify(v.slice(0, 32))})`);
  }
  return Number(v);
}

/** The pure decision: refuse a mutating call older than the highest epoch seen. */
export function fenceDecision(highest: number, epoch: number | undefined, mutating: boolean): 'pass' | 'raise' | 'refuse' {
  if (epoch === undefined) return 'pass';
  if (epoch > highest) return 'raise';
  if (epoch < highest && mutating) return 'refuse';
  return 'pass';
}

export class EpochFence {
  private highestSeen: number;
  private persisting: Promise<void> = Promise.resolve();

  /** `file` undefined: in memory only (tests, throwaway agents). */
  private constructor(
    private readonly file: string | undefined,
    initial: number,
  ) {
    this.highestSeen = initial;
  }

  static inMemory(): EpochFence {
    return new EpochFence(undefined, 0);
  }

  /** Reads the persisted epoch (0 when the file does not exist yet). */
  static async open(file: string): Promise<EpochFence> {
    let initial = 0;
    try {
      const n = Number((await readFile(file, 'utf8')).trim());
      if (Number.isSafeInteger(n) && n > 0) initial = n;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    return new EpochFence(file, initial);
  }

  get highest(): number {
    return this.highestSeen;
  }

  /** Records the epoch (reads too), or throws STALE_LEADER for an older mutating call. */
  async check(epoch: number | undefined, mutating: boolean): Promise<void> {
    const decision = fenceDecision(this.highestSeen, epoch, mutating);
    if (decision === 'refuse') {
      throw new AppError(
        'STALE_LEADER',
        `leader epoch ${epoch} is older than epoch ${this.highestSeen} this agent has seen: refused (a deposed orchestrator)`,
      );
    }
    if (decision === 'raise') {
      this.highestSeen = epoch as number;
      await this.persist();
    }
  }

  /** Writes are serialised and always write the current highest (atomic rename). */
  private persist(): Promise<void> {
    const file = this.file;
    if (file === undefined) return Promise.resolve();
    this.persisting = this.persisting
      .catch(() => undefined)
      .then(async () => {
        const tmp = `${file}.tmp`;
        await writeFile(tmp, `${this.highestSeen}\n`);
        await rename(tmp, file);
      });
    return this.persisting;
  }
}
