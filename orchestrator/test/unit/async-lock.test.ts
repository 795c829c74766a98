// KeyedLock, the agent's one lock per instance: calls for one key run one at a time in order,
// other keys do not wait, and a call that has to wait is reported (the agent logs it).
import { describe, expect, it } from 'vitest';
import { KeyedLock } from '../../src/agent/async-lock.js';

function gate(): { open: () => void; opened: Promise<void> } {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { open, opened };
}

describe('KeyedLock', () => {
  it('queues calls for one key, lets other keys through, and reports the calls that wait', async () => {
    const queued: string[] = [];
    const lock = new KeyedLock((key) => queued.push(key));
    const order: string[] = [];
    const first = gate();
    const a1 = lock.run('a', async () => {
      await first.opened;
      order.push('a1');
    });
    const a2 = lock.run('a', async () => void order.push('a2'));
    await lock.run('b', async () => void order.push('b'));
    expect(order).toEqual(['b']); // b never waited for a
    expect(queued).toEqual(['a']); // only a2 waited
    first.open();
    await Promise.all([a1, a2]);
    expect(order).toEqual(['b', 'a1', 'a2']);
  });

  it('runs the next call after a failed one, and the failure reaches only its caller', async () => {
    const lock = new KeyedLock();
    const failed = lock.run('a', () => Promise.reject(new Error('boom')));
    const next = lock.run('a', async () => 'ran');
    await expect(failed).rejects.toThrow('boom');
    await expect(next).resolves.toBe('ran');
  });
});
