// KeptReads (src/shared/kept-reads.ts): the short-lived reads the allocation
// path keeps (its group, the hosts' view, the group's rows).
import { describe, expect, it } from 'vitest';
import { KeptReads } from '../../src/shared/kept-reads.js';

function setup(ttlMs = 1000, maxKeys?: number) {
  let now = 10_000;
  const kept = new KeptReads<string, number>({ ttlMs, now: () => now, ...(maxKeys !== undefined ? { maxKeys } : {}) });
  let reads = 0;
  const read = (value: number) => async () => {
    reads++;
    return value;
  };
  return { kept, read, reads: () => reads, advance: (ms: number) => (now += ms) };
}

/** A read that answers when told to. */
function deferred<T>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('KeptReads', () => {
  it.each([
    ['just read', 0, true],
    ['one ms before the bound', 999, true],
    ['at the bound', 1000, false],
    ['long after', 60_000, false],
  ])('a value %s (%i ms old): kept %s', async (_what, age, keptStill) => {
    const t = setup();
    await t.kept.get('g', t.read(1));
    t.advance(age);
    expect(t.kept.peek('g')).toBe(keptStill ? 1 : undefined);
    expect(await t.kept.get('g', t.read(2))).toBe(keptStill ? 1 : 2);
    expect(t.reads()).toBe(keptStill ? 1 : 2);
  });

  it('a clock that went back does not make a value young: it is read again', async () => {
    const t = setup();
    await t.kept.get('g', t.read(1));
    t.advance(-5);
    expect(t.kept.peek('g')).toBeUndefined();
  });

  it('concurrent misses share one read; read() does not share and always reads', async () => {
    const t = setup();
    const d = deferred<number>();
    let reads = 0;
    const slow = () => {
      reads++;
      return d.promise;
    };
    const both = Promise.all([t.kept.get('g', slow), t.kept.get('g', slow)]);
    d.resolve(7);
    expect(await both).toEqual([7, 7]);
    expect(reads).toBe(1);
    expect(await t.kept.read('g', t.read(8))).toBe(8);
    expect(t.kept.peek('g')).toBe(8);
  });

  it('a drop while a read is in flight: that read answers its callers but is not kept, and later callers do not share it', async () => {
    const t = setup();
    const d = deferred<number>();
    const first = t.kept.get('g', () => d.promise);
    t.kept.drop('g');
    const second = t.kept.get('g', t.read(2));
    d.resolve(1);
    expect(await first).toBe(1);
    expect(await second).toBe(2);
    expect(t.kept.peek('g')).toBe(2);
  });

  it('drop and dropAll end kept values; a drop of one key leaves the others', async () => {
    const t = setup();
    await t.kept.get('a', t.read(1));
    await t.kept.get('b', t.read(2));
    t.kept.drop('a');
    expect([t.kept.peek('a'), t.kept.peek('b')]).toEqual([undefined, 2]);
    t.kept.dropAll();
    expect(t.kept.peek('b')).toBeUndefined();
  });

  it('a failed read keeps nothing and is not shared after it failed', async () => {
    const t = setup();
    await expect(t.kept.get('g', async () => Promise.reject(new Error('db down')))).rejects.toThrow('db down');
    expect(t.kept.peek('g')).toBeUndefined();
    expect(await t.kept.get('g', t.read(3))).toBe(3);
  });

  it('update changes a kept value and keeps its age; nothing is made up for a key not kept', async () => {
    const t = setup();
    await t.kept.get('g', t.read(1));
    t.advance(600);
    t.kept.update('g', (v) => v + 10);
    expect(t.kept.peek('g')).toBe(11);
    t.advance(400);
    expect(t.kept.peek('g')).toBeUndefined();
    t.kept.update('h', () => 99);
    expect(t.kept.peek('h')).toBeUndefined();
  });

  it('at most maxKeys are kept, the oldest read dropped first', async () => {
    const t = setup(1000, 2);
    await t.kept.get('a', t.read(1));
    await t.kept.get('b', t.read(2));
    await t.kept.read('a', t.read(3)); // read again: now the youngest
    await t.kept.get('c', t.read(4));
    expect([t.kept.peek('a'), t.kept.peek('b'), t.kept.peek('c')]).toEqual([3, undefined, 4]);
  });
});
