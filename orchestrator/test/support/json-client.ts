// A light HTTP/1.1 JSON client for load generators (node:http with a
// keep-alive pool): fetch (undici) cost the allocation load ≈ 1 ms of CPU per
// allocate + release in the client process — more than the server it loads,
// on the same two cores. Real sockets, 127.0.0.1 in the tests.
import http from 'node:http';
import { readText } from '../../src/server/drivers/agent-transport.js';

export interface JsonAnswer<T> {
  status: number;
  body: T;
}

export interface JsonClient {
  /** One request; a body is sent as JSON. The answer's body is parsed when it is JSON (else undefined). */
  call<T = Record<string, unknown>>(method: string, path: string, opts?: { body?: unknown; token?: string }): Promise<JsonAnswer<T>>;
  close(): void;
}

export function jsonClient(baseUrl: string, opts: { token?: string; maxSockets: number }): JsonClient {
  const url = new URL(baseUrl);
  const agent = new http.Agent({ keepAlive: true, maxSockets: opts.maxSockets });
  return {
    call<T>(method: string, path: string, o: { body?: unknown; token?: string } = {}): Promise<JsonAnswer<T>> {
      const payload = o.body === undefined ? undefined : JSON.stringify(o.body);
      const token = o.token ?? opts.token;
      const headers: Record<string, string | number> = {};
      if (token) headers.authorization = `Bearer ${token}`;
      if (payload !== undefined) {
        headers['content-type'] = 'application/json';
        headers['content-length'] = Buffer.byteLength(payload);
      }
      return new Promise((resolve, reject) => {
        const req = http.request({ host: url.hostname, port: url.port, path, method, agent, headers }, (res) => {
          readText(res)
            .then((text) => {
              const json = (res.headers['content-type'] ?? '').includes('json') && text !== '';
              resolve({ status: res.statusCode ?? 0, body: (json ? JSON.parse(text) : undefined) as T });
            })
            .catch(reject);
        });
        req.on('error', reject);
        req.end(payload);
      });
    },
    close: () => agent.destroy(),
  };
}
