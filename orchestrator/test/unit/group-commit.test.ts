// Group commit: the first write goes out at once, writes that arrive while it
// is on the wire go out together next; one bad item fails only itself.

import { describe, expect, it } from 'vitest';
import { GroupCommit } from '../../src/store/group-commit.js';

function recorder(fail: (item: number) => boolean = () => false) {
  const statements: number[][] = [];
  let release: (() => void) | undefined;
  const gate = { hold: false };
  const write = async (items: number[]): Promise<string[]> => {
    statements.push(items);
    if (gate.hold)
      await new Promise<void>((r) => {
        release = r;
      });
    if (items.some(fail)) throw new Error(`bad item in ${items.join(',')}`);
    return items.map((i) => `r${i}`);
  };
  return {
    statements,
    write,
    gate,
    open: () => {
      gate.hold = false;
      release?.();
    },
  };
}

describe('GroupCommit', () => {
  it('writes a lone item at once, alone', async () => {
    const r = recorder();
    const gc = new GroupCommit(r.write);
    expect(await gc.submit(1)).toBe('r1');
    expect(r.statements).toEqual([[1]]);
  });

  it('items submitted while a statement is in flight go out together in the next one, each caller gets its own result', async () => {
    const r = recorder();
    r.gate.hold = true;
    const gc = new GroupCommit(r.write);
    const first = gc.submit(1);
    await Promise.resolve();
    const rest = [2, 3, 4].map((n) => gc.submit(n));
    r.open();
    expect(await Promise.all([first, ...rest])).toEqual(['r1', 'r2', 'r3', 'r4']);
    expect(r.statements).toEqual([[1], [2, 3, 4]]);
  });

  it('bounds the items per statement', async () => {
    const r = recorder();
    r.gate.hold = true;
    const gc = new GroupCommit(r.write, 2);
    const all = [gc.submit(1)];
    await Promise.resolve();
    all.push(...[2, 3, 4, 5, 6].map((n) => gc.submit(n)));
    r.open();
    await Promise.all(all);
    expect(r.statements).toEqual([[1], [2, 3], [4, 5], [6]]);
  });

  it('a statement that fails is retried item by item: only the bad item is rejected', async () => {
    const r = recorder((i) => i === 3);
    r.gate.hold = true;
    const gc = new GroupCommit(r.write);
    const first = gc.submit(1);
    await Promise.resolve();
    const rest = [2, 3, 4].map((n) => gc.submit(n).catch((err: Error) => err.message));
    r.open();
    expect(await Promise.all([first, ...rest])).toEqual(['r1', 'r2', 'bad item in 3', 'r4']);
  });

  it('flushed waits for what is on its way, and answers at once when idle', async () => {
    const r = recorder();
    const gc = new GroupCommit(r.write);
    await gc.flushed();
    const p = gc.submit(7);
    await gc.flushed();
    expect(r.statements).toEqual([[7]]);
    expect(await p).toBe('r7');
  });
});
