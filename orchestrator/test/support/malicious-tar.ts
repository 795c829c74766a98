// Hand-built layer archives for tests, including every kind the extractor must
// reject. Built with tar-stream's pack directly so headers are exactly as written.

import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import tar from 'tar-stream';

export type TarHeader = Partial<tar.Header> & { name: string };
export interface TarEntrySpec {
  header: TarHeader;
  body?: string | Buffer;
}

/** An uncompressed tar of the given entries, in order. */
export async function tarBuffer(entries: readonly TarEntrySpec[]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  const done = (async () => {
    for await (const chunk of pack) chunks.push(chunk as Buffer);
  })();
  for (const { header, body } of entries) {
    await new Promise<void>((resolve, reject) => {
      const cb = (err?: Error | null) => (err ? reject(err) : resolve());
      if (body === undefined) pack.entry(header, cb);
      else pack.entry(header, body, cb);
    });
  }
  pack.finalize();
  await done;
  return Buffer.concat(chunks);
}

export async function tarGzBuffer(entries: readonly TarEntrySpec[]): Promise<Buffer> {
  return gzipSync(await tarBuffer(entries));
}

export function streamOf(buffer: Buffer): Readable {
  return Readable.from([buffer]);
}

const ok: TarEntrySpec = { header: { name: 'ok.txt', type: 'file', mode: 0o644 }, body: 'fine\n' };

/** One archive per kind of entry a layer must never contain, each after a harmless file. */
export const MALICIOUS_ENTRIES: Record<string, TarEntrySpec[]> = {
  symlink: [ok, { header: { name: 'link', type: 'symlink', linkname: '/etc/passwd' } }],
  hardlink: [ok, { header: { name: 'hard', type: 'link', linkname: 'ok.txt' } }],
  'character device': [ok, { header: { name: 'null', type: 'character-device', devmajor: 1, devminor: 3 } }],
  'block device': [ok, { header: { name: 'sda', type: 'block-device', devmajor: 8, devminor: 0 } }],
  fifo: [ok, { header: { name: 'pipe', type: 'fifo' } }],
  'absolute path': [ok, { header: { name: '/tmp/endercloud-escape.txt', type: 'file' }, body: 'x' }],
  "'../' escape": [ok, { header: { name: '../escape.txt', type: 'file' }, body: 'x' }],
  'nested escape': [ok, { header: { name: 'a/b/../../../escape.txt', type: 'file' }, body: 'x' }],
  'NUL byte in a pax path': [ok, { header: { name: 'nul.txt', type: 'file', pax: { path: 'a\u0000b' } }, body: 'x' }],
  'file turned into a directory': [ok, { header: { name: 'ok.txt/inner', type: 'file' }, body: 'x' }],
  'directory entry over a file': [ok, { header: { name: 'ok.txt', type: 'directory' } }],
  'directory turned into a file': [{ header: { name: 'dir', type: 'directory' } }, { header: { name: 'dir', type: 'file' }, body: 'x' }],
  'duplicate file': [ok, ok],
};

/** Rewrites the typeflag of the tar header at `offset` (and its header checksum). */
export function setTypeflag(tarData: Buffer, offset: number, flag: string): Buffer {
  const out = Buffer.from(tarData);
  out[offset + 156] = flag.charCodeAt(0);
  out.fill(0x20, offset + 148, offset + 156);
  let sum = 0;
  for (let i = offset; i < offset + 512; i += 1) sum += out[i] as number;
  out.write(`${sum.toString(8).padStart(6, '0')}\0 `, offset + 148, 'latin1');
  return out;
}
