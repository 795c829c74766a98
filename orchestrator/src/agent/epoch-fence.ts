// Leader fencing on the agent: remembers the highest reconciler-lease epoch
// (x-leader-epoch) a mutating orchestrator call carried and refuses a mutating
// call with an older one (STALE_LEADER), so a paused-then-resumed old leader
// cannot act. Only mutating calls count: a read is never refused and never
// raises the epoch; a mutating call must carry the header; a raise is accepted
// only within a bounded jump. The highest epoch is persisted (file in the
// runtime directory) before the call that raised it proceeds, so a restarted
// agent still refuses an old leader. The new leader announces itself with
// POST /leader (agent-driver.ts), so the agent learns it before a late call.

import { readFile, rename, writeFile } from 'node:fs/promises';
import { LEADER_EPOCH_HEADER } from '../contracts/agent-api.js';
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

/**
 * How far one mutating call may raise the highest epoch seen. The lease's epoch
 * rises by one per change of holder, so a real leader is never far ahead of what
 * an agent saw; the bound keeps one call from parking the agent at an epoch no
 * leader will reach (2^53-1). To recover from a wrong raise: stop the agent,
 * delete its leader-epoch file, start it.
 */
export const MAX_EPOCH_JUMP = 1000;
/** The first epoch a fresh agent (none seen) accepts: up to this, so a host joining a long-lived cluster learns its epoch. */
export const MAX_FIRST_EPOCH = 1_000_000;

export type FenceDecision = 'pass' | 'raise' | 'refuse' | 'missing' | 'too-far';

/** The pure decision for one call, from the highest epoch seen (0: none yet). */
export function fenceDecision(highest: number, epoch: number | undefined, mutating: boolean): FenceDecision {
  if (!mutating) return 'pass';
  if (epoch === undefined) return 'missing';
  if (epoch < highest) return 'refuse';
  if (epoch === highest) return 'pass';
  return epoch <= maxAccepted(highest) ? 'raise' : 'too-far';
}

/** The highest epoch a call may raise to from `highest`. */
export function maxAccepted(highest: number): number {
  return highest === 0 ? MAX_FIRST_EPOCH : highest + MAX_EPOCH_JUMP;
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

  /** Passes a read; for a mutating call records a newer epoch, or throws (missing header, older epoch, too far ahead). */
  async check(epoch: number | undefined, mutating: boolean): Promise<void> {
    const decision = fenceDecision(this.highestSeen, epoch, mutating);
    if (decision === 'missing') {
      throw new AppError('BAD_REQUEST', `a mutating call must carry the ${LEADER_EPOCH_HEADER} header (the reconciler lease's epoch)`);
    }
    if (decision === 'refuse') {
      throw new AppError(
        'STALE_LEADER',
        `leader epoch ${epoch} is older than epoch ${this.highestSeen} this agent has seen: refused (a deposed orchestrator)`,
      );
    }
    if (decision === 'too-far') {
      throw new AppError(
        'BAD_REQUEST',
        `leader epoch ${epoch} is too far ahead of epoch ${this.highestSeen} this agent has seen: at most ${maxAccepted(this.highestSeen)} ` +
          `(a fresh agent accepts up to ${MAX_FIRST_EPOCH}, then at most +${MAX_EPOCH_JUMP} per call)`,
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
