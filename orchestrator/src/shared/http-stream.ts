// A GET whose answer is a long-lived stream (followed logs), used by the
// agent driver and ectl. node:http(s) instead of fetch: Node's fetch cuts a
// body that is quiet for 300 s (undici's body timeout), and a quiet server log
// is normal. Only the wait for the answer's head is bounded.

import { request as httpRequest, type IncomingMessage } from 'node:http';

export interface StreamAnswer {
  status: number;
  contentType: string;
  /** The body; destroy it (or abort the signal) to close the connection. */
  body: IncomingMessage;
}

/** Rejects with an Error named TimeoutError when no head arrives within headTimeoutMs, AbortError when the signal aborts. */
export async function openStream(
  url: URL,
  options: { headers: Readonly<Record<string, string>>; signal?: AbortSignal; headTimeoutMs: number },
): Promise<StreamAnswer> {
  // node:https (and TLS) only when needed: ectl loads this module on every call.
  const send = url.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      { method: 'GET', headers: { ...options.headers }, ...(options.signal ? { signal: options.signal } : {}) },
      (res) => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body: res });
      },
    );
    const timer = setTimeout(() => {
      const err = new Error(`no answer within ${options.headTimeoutMs} ms`);
      err.name = 'TimeoutError';
      req.destroy(err);
    }, options.headTimeoutMs);
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}

/** The first maxBytes of a (short) body as text: error answers. */
export async function readSome(body: IncomingMessage, maxBytes = 64 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk as Buffer);
    size += (chunk as Buffer).length;
    if (size >= maxBytes) break;
  }
  body.destroy();
  return Buffer.concat(chunks).subarray(0, maxBytes).toString('utf8');
}
