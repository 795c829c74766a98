// A thin client of the orchestrator's public API (/api/v1): bearer auth, JSON
// bodies, and every error answer turned into an ApiError carrying its code.
// `call` takes a route of the public contract (contracts/public-api/routes.ts)
// and answers its contract type; the panel calls through the same client.ts.
// Every JSON answer, by `call` or by path, is checked against the contract's
// response schema of its route (answer-check.ts) before a command reads it.

import { Readable } from 'node:stream';
import { callRoute, type Answer, type CallOptions, type ParamsOf } from '../contracts/public-api/client.js';
import type { RouteKey } from '../contracts/public-api/routes.js';
import { openStream, readSome, type StreamAnswer } from '../shared/http-stream.js';
import { ApiError, CliError } from './errors.js';
import { classifyHealth, notOrchestratorMessage } from './target-check.js';

export type FetchFn = typeof globalThis.fetch;

export interface ApiClientOptions {
  url: string;
  token: string | undefined;
  fetch?: FetchFn;
  /** Bound on one call (uploads get their own, longer bound). */
  timeoutMs?: number;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** A streamed body (layer uploads); sent as-is with `contentType`. */
  stream?: Readable;
  contentType?: string;
  contentLength?: number;
  timeoutMs?: number;
  /** Return the text of the answer instead of parsing JSON. */
  text?: boolean;
}

export class ApiClient {
  readonly baseUrl: string;
  private readonly fetchFn: FetchFn;
  private readonly timeoutMs: number;

  constructor(private readonly options: ApiClientOptions) {
    this.baseUrl = `${options.url}/api/v1`;
    this.fetchFn = options.fetch ?? globalThis.fetch;
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** A route of the public contract with its parameters, body and query (`timeoutMs` bounds the call); answers the route's contract type. */
  call<K extends RouteKey>(route: K, params: ParamsOf<K>, opts: CallOptions<K> & { timeoutMs?: number } = {}): Promise<Answer<K>> {
    const bound = opts.timeoutMs !== undefined ? { timeoutMs: opts.timeoutMs } : {};
    return callRoute({ request: (method, path, o) => this.request(method, path, { ...o, ...bound }) }, route, params, opts);
  }

  get<T>(path: string, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('GET', path, opts);
  }

  /** GET that answers `undefined` on 404 (used to read current state for apply). */
  async getOptional<T>(path: string): Promise<T | undefined> {
    try {
      return await this.get<T>(path);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) return undefined;
      throw err;
    }
  }

  put<T>(path: string, body: unknown, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('PUT', path, { ...opts, body });
  }

  post<T>(path: string, body: unknown, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('POST', path, { ...opts, body });
  }

  patch<T>(path: string, body: unknown, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('PATCH', path, { ...opts, body });
  }

  delete<T>(path: string, body?: unknown, opts: RequestOptions = {}): Promise<T> {
    return this.request<T>('DELETE', path, body === undefined ? opts : { ...opts, body });
  }

  /** A binary answer as a stream (backup downloads); the bound covers the answer's head only. */
  async download(path: string, timeoutMs = this.timeoutMs): Promise<{ stream: Readable; headers: Headers }> {
    const url = new URL(`${this.baseUrl}${path}`);
    const headers: Record<string, string> = { accept: 'application/gzip, application/json' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    let res: Response;
    try {
      res = await this.fetchFn(url, { headers, signal: controller.signal });
    } catch (err) {
      throw new CliError(
        'runtime',
        `cannot download ${url.pathname} from ${this.options.url}: ${err instanceof Error ? err.message : String(err)}`,
      );
    } finally {
      clearTimeout(timer);
    }
    if (!res.ok || !res.body) throw toApiError(res.status, await res.text());
    return { stream: Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>), headers: res.headers };
  }

  /**
   * A streamed text answer (followed logs), read until it ends or `signal`
   * aborts; only the wait for the answer's head is bounded. Over node:http, not
   * fetch: fetch cuts a body that is quiet for 300 s.
   */
  async follow(path: string, query: Record<string, string | number>, signal: AbortSignal): Promise<Readable> {
    const url = new URL(`${this.baseUrl}${path}`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'text/plain, application/json' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    let answer: StreamAnswer;
    try {
      answer = await openStream(url, { headers, signal, headTimeoutMs: this.timeoutMs });
    } catch (err) {
      if ((err as Error).name === 'TimeoutError')
        throw new CliError('runtime', `GET ${url.pathname}: no answer from ${this.options.url} within ${this.timeoutMs / 1000}s`);
      if (signal.aborted) throw new CliError('runtime', `GET ${url.pathname}: interrupted`);
      throw new CliError('runtime', `cannot reach the orchestrator at ${this.options.url}: ${(err as Error).message}`);
    }
    if (answer.status !== 200) {
      const err = toApiError(answer.status, await readSome(answer.body));
      if (looksForeign(err)) await this.checkTarget();
      throw err;
    }
    if (!answer.contentType.startsWith('text/plain')) {
      answer.body.destroy();
      await this.checkTarget();
      throw new CliError(
        'runtime',
        `GET ${url.pathname}: the orchestrator answered ${answer.contentType || 'no content type'}, not a text stream`,
      );
    }
    return answer.body;
  }

  private targetChecked: Promise<void> | undefined;

  /**
   * Throws one line when the URL is not an orchestrator (an agent, another web
   * server); asked once, and only when an answer looks wrong.
   */
  checkTarget(): Promise<void> {
    this.targetChecked ??= (async () => {
      let res: Response;
      try {
        res = await this.fetchFn(new URL(`${this.baseUrl}/health`), {
          headers: { accept: 'application/json' },
          signal: AbortSignal.timeout(5000),
        });
      } catch {
        return; // the first answer came, so let that answer's error speak
      }
      const message = notOrchestratorMessage(
        this.options.url,
        classifyHealth(res.status, res.headers.get('content-type'), await res.text()),
      );
      if (message) throw new CliError('runtime', message);
    })();
    return this.targetChecked;
  }

  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const url = new URL(`${this.baseUrl}${path}`);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: opts.text ? 'text/plain, application/json' : 'application/json' };
    if (this.options.token) headers.authorization = `Bearer ${this.options.token}`;
    let body: BodyInit | undefined;
    if (opts.stream) {
      headers['content-type'] = opts.contentType ?? 'application/octet-stream';
      if (opts.contentLength !== undefined) headers['content-length'] = String(opts.contentLength);
      body = opts.stream as unknown as BodyInit;
    } else if (opts.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.body);
    }
    let res: Response;
    try {
      res = await this.fetchFn(url, {
        method,
        headers,
        body,
        signal: AbortSignal.timeout(opts.timeoutMs ?? this.timeoutMs),
        ...(opts.stream ? { duplex: 'half' } : {}),
      } as RequestInit);
    } catch (err) {
      const cause = err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
      if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError')) {
        throw new CliError(
          'runtime',
          `${method} ${url.pathname}: no answer from ${this.options.url} within ${(opts.timeoutMs ?? this.timeoutMs) / 1000}s`,
        );
      }
      throw new CliError('runtime', `cannot reach the orchestrator at ${this.options.url}: ${cause}`);
    }
    const text = await res.text();
    if (!res.ok) {
      const err = toApiError(res.status, text);
      if (looksForeign(err)) await this.checkTarget();
      throw err;
    }
    const html = /html/i.test(res.headers.get('content-type') ?? '');
    if (html) await this.checkTarget();
    if (opts.text && !html) return text as T;
    if (text === '' && !html) return undefined as T;
    let answer: unknown;
    try {
      if (html) throw new Error('html');
      answer = JSON.parse(text);
    } catch {
      await this.checkTarget();
      throw new CliError('runtime', `${method} ${url.pathname}: the orchestrator answered HTTP ${res.status} with a body that is not JSON`);
    }
    // The answer is what the public contract says this route answers, or a clear error (answer-check.ts).
    const { checkAnswer } = await import('./answer-check.js');
    checkAnswer(method, path, res.status, answer);
    return answer as T;
  }
}

/**
 * An error answer that may come from something else than an orchestrator: not
 * our error shape, a 401, or the generic NOT_FOUND an unknown route gets (the
 * orchestrator's own "X does not exist" answers mostly carry X_NOT_FOUND).
 */
function looksForeign(err: ApiError): boolean {
  return err.code.startsWith('HTTP_') || err.code === 'UNAUTHORIZED' || err.code === 'NOT_FOUND';
}

export function toApiError(status: number, text: string): ApiError {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown } };
    if (body.error && typeof body.error.code === 'string') {
      return new ApiError(status, body.error.code, typeof body.error.message === 'string' ? body.error.message : '');
    }
  } catch {
    // not JSON: fall through
  }
  return new ApiError(status, `HTTP_${status}`, text.slice(0, 200) || 'no error body');
}

/** Lists may come bare or wrapped (`{hosts: [...]}`); take the first array found. */
export function listOf<T>(value: unknown, key: string): T[] {
  if (Array.isArray(value)) return value as T[];
  if (value && typeof value === 'object') {
    const obj = value as Record<string, unknown>;
    if (Array.isArray(obj[key])) return obj[key] as T[];
    if (Array.isArray(obj.items)) return obj.items as T[];
  }
  return [];
}

export const enc = encodeURIComponent;
