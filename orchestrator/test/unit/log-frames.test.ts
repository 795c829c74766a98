// The streaming demuxer of Docker's multiplexed logs: frames cut anywhere
// between chunks come out whole and in order; unframed (TTY) output passes as is.

import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LogFrameDemuxer } from '../../src/agent/log-frames.js';

function frame(stream: 1 | 2, text: string): Buffer {
  const payload = Buffer.from(text);
  const header = Buffer.alloc(8);
  header[0] = stream;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
}

async function through(chunks: Buffer[]): Promise<string> {
  const out: Buffer[] = [];
  for await (const c of Readable.from(chunks).pipe(new LogFrameDemuxer())) out.push(c as Buffer);
  return Buffer.concat(out).toString('utf8');
}

describe('LogFrameDemuxer', () => {
  const all = Buffer.concat([frame(1, 'first line\n'), frame(2, 'an error\n'), frame(1, 'héllo wörld\n'), frame(1, '')]);

  it('joins stdout and stderr frames in order, whatever the chunk boundaries', async () => {
    const expected = 'first line\nan error\nhéllo wörld\n';
    expect(await through([all])).toBe(expected);
    for (const size of [1, 3, 7, 8, 9, 13]) {
      const chunks: Buffer[] = [];
      for (let i = 0; i < all.length; i += size) chunks.push(all.subarray(i, i + size));
      expect(await through(chunks), `chunks of ${size}`).toBe(expected);
    }
  });

  it('passes output that carries no frame header unchanged (a TTY container), also when shorter than a header', async () => {
    expect(await through([Buffer.from('plain tty output\n'), Buffer.from('more\n')])).toBe('plain tty output\nmore\n');
    expect(await through([Buffer.from('hi\n')])).toBe('hi\n');
  });
});
