// The API client: same-origin fetches that carry the session cookie and the
// CSRF header every mutation needs (orchestrator/src/server/auth/guard.ts).

export type Loose = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message);
  }
}

export const CSRF = { 'x-endercloud-csrf': '1' } as const;

export async function api<T = Loose>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`/api/v1${path}`, {
    method,
    credentials: 'same-origin',
    headers: { ...CSRF, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  const data = text && (res.headers.get('content-type') ?? '').includes('json') ? (JSON.parse(text) as Loose) : text;
  if (!res.ok) {
    const err = typeof data === 'object' ? (data as Loose).error : undefined;
    throw new ApiError(res.status, err?.code ?? `HTTP_${res.status}`, err?.message ?? (typeof data === 'string' && data ? data : res.statusText));
  }
  return data as T;
}

export const enc = encodeURIComponent;

export interface Me {
  name: string;
  kind: string;
  scopes: string[];
}

/** GET /session: the principal, or `{authenticated: false}` when the browser holds no session. */
export type SessionAnswer = ({ authenticated: true } & Me) | { authenticated: false };

/** An agent call the orchestrator relays names the agent: "agent http://10.0.0.5:8081 refused GET /v1/…: <its reason>". */
const AGENT_PREFIX = /\bagent\s+https?:\/\/\S+\s+refused\s+[A-Z]+\s+\S+:\s*/g;
const URL_TEXT = /\bhttps?:\/\/[^\s,;)]+/g;

/** A server-written text (a state reason, an error) without agent addresses: "agent … refused GET …: why" keeps "why". */
export function forPeople(text: string): string {
  return text.replace(AGENT_PREFIX, '').replace(URL_TEXT, 'the host').trim();
}

/**
 * An error in words for people: never an agent URL or internal text. 403 says
 * "Not allowed"; a server fault says so without its text (the orchestrator's
 * log and the audit log keep it); an agent's refusal keeps only its reason.
 */
export function peopleMessage(error: unknown): string {
  if (!(error instanceof ApiError)) {
    return error instanceof TypeError ? 'The orchestrator cannot be reached; check the connection.' : 'Something went wrong in the panel.';
  }
  const text = forPeople(error.message);
  if (error.status === 403) {
    const scope = /lacks scope (\S+)/.exec(text)?.[1];
    return scope ? `Not allowed: this token lacks the ${scope} scope.` : `Not allowed: ${text}`;
  }
  if (error.code === 'HOST_UNAVAILABLE') return "The server's host cannot be reached right now; try again when it is back.";
  if (error.code === 'TIMEOUT' || /\bagent at\b/.test(text)) return "The server's host did not answer in time; try again.";
  if (error.code === 'INTERNAL' || error.status === 500) return "Something went wrong on the server; the orchestrator's log has the details.";
  return text || `The request failed (${error.status}).`;
}

const WRITERS = ['admin', 'manager', 'operator'];

/** What the signed-in token may do; the API checks again (the panel only hides what would be refused). */
export function can(me: Me | null, what: string): boolean {
  if (!me) return false;
  const s = me.scopes;
  if (what === 'admin') return s.includes('admin');
  if (what === 'manager') return s.includes('admin') || s.includes('manager');
  return s.some((x) => WRITERS.includes(x) || x === `${what}:write`);
}

export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '–';
  const s = Math.round((now - Date.parse(iso)) / 1000);
  if (s < 0) return `in ${duration(-s)}`;
  return `${duration(s)} ago`;
}

export function duration(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86400)} d`;
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return `${v.toFixed(u === 0 ? 0 : 1)} ${units[u]}`;
}
