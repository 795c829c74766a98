// The agent's side of enrolment (docs/agent.md "Enrolment"): at start, the
// credentials saved in `<runtime dir>/credentials.json` (0600), else — when
// AGENT_JOIN_TOKEN is given — one POST /agents/enrol that trades the join token
// for this host's own credentials, saved atomically before anything uses them.
// A join token that already produced the saved credentials is harmless in the
// environment; a different one re-enrols (rotation, or a moved control URL).
// Without either, the legacy shared AGENT_TOKEN (or nothing, loopback only).

import { createHash } from 'node:crypto';
import { chmod, readFile, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ENROL_PATH, type EnrolAnswer, type EnrolBody } from '../contracts/agent-api.js';
import type { Logger } from '../shared/logger.js';
import { isLoopbackAddress } from '../shared/http.js';

export const CREDENTIALS_FILE = 'credentials.json';
const ENROL_TIMEOUT_MS = 15_000;

/** What credentials.json holds. */
export interface SavedCredentials {
  agentId: string;
  orchestratorUrl: string;
  controlUrl: string;
  /** ech_…: this agent's bearer towards the orchestrator (heartbeats, layer downloads). */
  hostCredential: string;
  /** The only bearer this agent's API accepts. */
  callCredential: string;
  generation: number;
  /** sha256 (hex) of the join token that produced these: the same token again is not a new enrolment. */
  joinTokenSha256: string;
  enrolledAt: string;
}

/** How this agent authenticates, both ways. */
export type AgentAuth =
  { mode: 'enrolled'; credentials: SavedCredentials; enrolledNow: boolean } | { mode: 'shared'; token: string } | { mode: 'none' };

export interface ResolveAuthOptions {
  agentId: string;
  orchestratorUrl: string;
  controlUrl: string;
  listenAddress: string;
  runtimeDirectory: string;
  joinToken: string | undefined;
  token: string | undefined;
  /** The enrolment body's heartbeat facts (the first heartbeat's). */
  facts: () => Promise<Omit<EnrolBody, 'agentId'>>;
  fetch: typeof fetch;
  logger: Logger;
}

const sha256 = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

/** The saved credentials, or undefined when there are none; a file readable by others is narrowed to 0600. */
export async function readCredentials(runtimeDirectory: string): Promise<SavedCredentials | undefined> {
  const file = path.join(runtimeDirectory, CREDENTIALS_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
  }
  if ((await stat(file)).mode & 0o077) await chmod(file, 0o600);
  let parsed: Partial<SavedCredentials>;
  try {
    parsed = JSON.parse(text) as Partial<SavedCredentials>;
  } catch {
    throw new Error(`${file} is not JSON: remove it and enrol again (AGENT_JOIN_TOKEN)`);
  }
  for (const key of ['agentId', 'hostCredential', 'callCredential', 'joinTokenSha256', 'controlUrl'] as const) {
    if (typeof parsed[key] !== 'string' || parsed[key] === '')
      throw new Error(`${file} has no ${key}: remove it and enrol again (AGENT_JOIN_TOKEN)`);
  }
  return parsed as SavedCredentials;
}

/** Writes the credentials atomically (a temp file, 0600, then rename): never half a file. */
export async function saveCredentials(runtimeDirectory: string, credentials: SavedCredentials): Promise<void> {
  const file = path.join(runtimeDirectory, CREDENTIALS_FILE);
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
}

/** One enrolment call; throws with the orchestrator's own message when it refuses. */
export async function enrol(
  orchestratorUrl: string,
  joinToken: string,
  body: EnrolBody,
  fetchFn: typeof fetch = globalThis.fetch,
): Promise<EnrolAnswer> {
  const url = `${orchestratorUrl.replace(/\/+$/, '')}${ENROL_PATH}`;
  let res: Response;
  try {
    res = await fetchFn(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${joinToken}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(ENROL_TIMEOUT_MS),
    });
  } catch (err) {
    throw new Error(`enrolment at ${url} failed: ${(err as Error).message}`, { cause: err });
  }
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!res.ok) {
    const message = (parsed as { error?: { message?: string } } | undefined)?.error?.message ?? `HTTP ${res.status}`;
    throw new Error(`the orchestrator refused the enrolment (${res.status}): ${message}`);
  }
  const answer = parsed as Partial<EnrolAnswer> | undefined;
  if (
    typeof answer?.hostCredential !== 'string' ||
    typeof answer.callCredential !== 'string' ||
    typeof answer.credentialGeneration !== 'number'
  )
    throw new Error(`the orchestrator at ${url} answered the enrolment without credentials`);
  return answer as EnrolAnswer;
}

/**
 * Decides this agent's credentials at start (see the file comment). Throws —
 * the agent refuses to start — when the saved credentials belong to another
 * agent id and no join token is given, when an enrolment is refused, and when
 * the API would listen beyond loopback with no credential at all.
 */
export async function resolveAgentAuth(o: ResolveAuthOptions): Promise<AgentAuth> {
  const saved = await readCredentials(o.runtimeDirectory);
  const sameToken = o.joinToken === undefined || (saved !== undefined && sha256(o.joinToken) === saved.joinTokenSha256);
  if (saved && saved.agentId === o.agentId && sameToken) {
    if (saved.controlUrl !== o.controlUrl.replace(/\/+$/, ''))
      o.logger.error(
        { enrolledControlUrl: saved.controlUrl, controlUrl: o.controlUrl },
        'AGENT_CONTROL_URL differs from the enrolled control URL: the orchestrator refuses these heartbeats; re-enrol (a new AGENT_JOIN_TOKEN) to move this host',
      );
    return { mode: 'enrolled', credentials: saved, enrolledNow: false };
  }
  if (o.joinToken !== undefined) {
    const body: EnrolBody = { agentId: o.agentId, ...(await o.facts()) };
    const answer = await enrol(o.orchestratorUrl, o.joinToken, body, o.fetch);
    const credentials: SavedCredentials = {
      agentId: o.agentId,
      orchestratorUrl: o.orchestratorUrl,
      controlUrl: answer.controlUrl,
      hostCredential: answer.hostCredential,
      callCredential: answer.callCredential,
      generation: answer.credentialGeneration,
      joinTokenSha256: sha256(o.joinToken),
      enrolledAt: new Date().toISOString(),
    };
    await saveCredentials(o.runtimeDirectory, credentials);
    o.logger.info(
      { agentId: o.agentId, generation: answer.credentialGeneration, controlUrl: answer.controlUrl },
      saved ? 're-enrolled: new credentials saved' : 'enrolled: credentials saved',
    );
    return { mode: 'enrolled', credentials, enrolledNow: true };
  }
  if (saved)
    throw new Error(
      `${path.join(o.runtimeDirectory, CREDENTIALS_FILE)} holds the credentials of agent ${saved.agentId}, not ${o.agentId}: enrol this agent id with AGENT_JOIN_TOKEN`,
    );
  if (o.token !== undefined) return { mode: 'shared', token: o.token };
  if (!isLoopbackAddress(o.listenAddress))
    throw new Error(
      `the agent API would listen on ${o.listenAddress} (beyond loopback) with no credential: anyone who reaches it would control Docker on this host. Enrol it (AGENT_JOIN_TOKEN from: ectl hosts join-token create), set the legacy shared AGENT_TOKEN, or listen on 127.0.0.1 (AGENT_LISTEN_ADDRESS)`,
    );
  return { mode: 'none' };
}
