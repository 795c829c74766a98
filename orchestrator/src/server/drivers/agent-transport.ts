// How the agent driver's calls reach an agent: node:http / node:https over a
// bounded keep-alive pool per host. Node's fetch (undici) cost most of the
// orchestrator's CPU in a full reconcile pass (one inventory per host); a
// plain request on a kept socket is several times cheaper. The driver builds
// requests and maps answers; a transport only moves bytes, so tests can wrap
// one (delay, record) without a second copy of the call logic.

import { Agent as HttpAgent, request as httpRequest, type ClientRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { pipeline, type Readable } from 'node:stream';

export interface AgentRequest {
  method: string;
  url: URL;
  headers: Readonly<Record<string, string>>;
  /** Encoded JSON (sent with content-length), or a stream (sent chunked). */
  body?: Buffer | Readable;
  /** Aborting destroys the request and, once it came, the answer's body. */
  signal: AbortSignal;
}

export interface AgentAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** Read it to the end or destroy it: until then its socket is not free for the next call. */
  body: Readable;
}

export interface AgentTransport {
  /** Resolves at the answer's head; rejects on connection errors and on abort. */
  send(request: AgentRequest): Promise<AgentAnswer>;
}

/** Sockets per agent (host:port): more calls wait for a free one. */
export const AGENT_SOCKETS_PER_HOST = 32;
/**
 * How long an idle socket is kept. Below the agent's Fastify keepAliveTimeout
 * (72 s, its default) so that this side closes first, and a reused socket is
 * rarely one the agent is closing at that moment. Node also honours a shorter
 * `Keep-Alive: timeout=N` the server announces (it keeps the socket N − 1 s).
 */
export const AGENT_FREE_SOCKET_TIMEOUT_MS = 30_000;

export interface HttpAgentTransportOptions {
  maxSocketsPerHost?: number;
  freeSocketTimeoutMs?: number;
}

/**
 * The production transport. TLS is Node's default for https control URLs (the
 * bundled CAs plus NODE_EXTRA_CA_CERTS), as it was with fetch.
 */
export class HttpAgentTransport implements AgentTransport {
  private readonly http: HttpAgent;
  private readonly https: HttpsAgent;

  constructor(options: HttpAgentTransportOptions = {}) {
    const maxSockets = options.maxSocketsPerHost ?? AGENT_SOCKETS_PER_HOST;
    const timeout = options.freeSocketTimeoutMs ?? AGENT_FREE_SOCKET_TIMEOUT_MS;
    if (!Number.isInteger(maxSockets) || maxSockets < 1) throw new Error(`maxSocketsPerHost must be a positive integer, got ${maxSockets}`);
    if (!Number.isInteger(timeout) || timeout < 1) throw new Error(`freeSocketTimeoutMs must be a positive integer (ms), got ${timeout}`);
    // `timeout` is the socket's idle timeout; the Agent destroys a socket that
    // reaches it only while free (a call waiting on a slow agent keeps its own).
    const agentOptions = { keepAlive: true, maxSockets, timeout, scheduling: 'lifo' as const };
    this.http = new HttpAgent(agentOptions);
    this.https = new HttpsAgent(agentOptions);
  }

  send(request: AgentRequest): Promise<AgentAnswer> {
    return this.attempt(request, request.method === 'GET' && request.body === undefined);
  }

  /** Closes every socket, idle or not (the orchestrator's stop). */
  close(): void {
    this.http.destroy();
    this.https.destroy();
  }

  /**
   * One request. A kept socket the agent closed just as it was reused fails
   * with ECONNRESET/EPIPE before any answer: a GET is sent again once on a
   * fresh socket; anything else may have acted and fails (the command layer
   * decides about retrying it).
   */
  private attempt(request: AgentRequest, mayRetry: boolean): Promise<AgentAnswer> {
    return new Promise((resolve, reject) => {
      const tls = request.url.protocol === 'https:';
      const headers: Record<string, string> = { ...request.headers };
      if (Buffer.isBuffer(request.body)) headers['content-length'] = String(request.body.length);
      let answered = false;
      // A failed upload destroys the request; its own error says why, not the "socket hang up" that follows.
      let uploadError: Error | undefined;
      const send = tls ? httpsRequest : httpRequest;
      const req: ClientRequest = send(
        request.url,
        { method: request.method, headers, agent: tls ? this.https : this.http, signal: request.signal },
        (res: IncomingMessage) => {
          answered = true;
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: res });
        },
      );
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (answered) return; // the body's reader sees it
        if (mayRetry && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE') && !request.signal.aborted) {
          resolve(this.attempt(request, false));
          return;
        }
        reject(uploadError ?? err);
      });
      const body = request.body;
      if (body === undefined || Buffer.isBuffer(body)) req.end(body);
      // pipeline destroys the request when the upload fails and the upload when the request does.
      else {
        body.once('error', (err) => (uploadError = err));
        pipeline(body, req, () => undefined);
      }
    });
  }
}

/** The whole body as text (JSON answers). */
export async function readText(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

let shared: HttpAgentTransport | undefined;

/** One process-wide pool for drivers built without a transport (tools, tests); the orchestrator owns its own. */
export function sharedAgentTransport(): HttpAgentTransport {
  shared ??= new HttpAgentTransport();
  return shared;
}
