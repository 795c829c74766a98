// Heartbeats to the orchestrator: one right after the listener opens, then one
// per interval, never overlapping, each bounded by min(3 s, interval). A slow
// or failing orchestrator is logged and never stops the agent.

import { availableParallelism, freemem, totalmem } from 'node:os';
import { statfs } from 'node:fs/promises';
import { heartbeatPath, type AgentHeartbeatBody, type AgentResources } from '../contracts/agent-api.js';
import type { Logger } from '../shared/logger.js';
import type { Timers } from '../shared/timers.js';

/** The heartbeat's wire shape lives in the contract; a real agent always reports raw machine facts. */
export type HeartbeatResources = AgentResources;
export type HeartbeatBody = AgentHeartbeatBody;

export interface HeartbeaterOptions {
  orchestratorUrl: string;
  agentId: string;
  token: string | undefined;
  intervalMs: number;
  body: () => Promise<HeartbeatBody>;
  fetch: typeof fetch;
  timers: Timers;
  now: () => number;
  logger: Logger;
}

export const MAX_HEARTBEAT_TIMEOUT_MS = 3000;

/** Host resources for the heartbeat; disk is the free space of the runtime directory. */
export async function readResources(runtimeDirectory: string): Promise<HeartbeatResources> {
  let diskFreeBytes: number | null = null;
  try {
    const s = await statfs(runtimeDirectory);
    diskFreeBytes = s.bavail * s.bsize;
  } catch {
    diskFreeBytes = null;
  }
  return { cpuCount: availableParallelism(), memoryTotalBytes: totalmem(), memoryAvailableBytes: freemem(), diskFreeBytes };
}

export class Heartbeater {
  private timer: unknown;
  private running = false;
  private inFlight: Promise<void> | undefined;
  private readonly url: string;
  private readonly timeoutMs: number;

  constructor(private readonly deps: HeartbeaterOptions) {
    this.url = `${deps.orchestratorUrl}${heartbeatPath(deps.agentId)}`;
    this.timeoutMs = Math.min(MAX_HEARTBEAT_TIMEOUT_MS, deps.intervalMs);
  }

  /** Sends the first beat now; later beats follow, each scheduled after the previous finished. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.tick();
  }

  /** Stops scheduling and waits for a beat in flight (bounded by its timeout). */
  async stop(): Promise<void> {
    this.running = false;
    if (this.timer !== undefined) this.deps.timers.clearTimeout(this.timer);
    this.timer = undefined;
    await this.inFlight;
  }

  private tick(): void {
    const startedAt = this.deps.now();
    this.inFlight = this.beat().then(() => {
      this.inFlight = undefined;
      if (!this.running) return;
      const delay = Math.max(0, this.deps.intervalMs - (this.deps.now() - startedAt));
      this.timer = this.deps.timers.setTimeout(() => this.tick(), delay);
    });
  }

  /** One heartbeat; resolves true when the orchestrator accepted it. Never rejects. */
  async beat(): Promise<boolean> {
    const controller = new AbortController();
    const timeout = this.deps.timers.setTimeout(() => controller.abort(), this.timeoutMs);
    try {
      const body = await this.deps.body();
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (this.deps.token !== undefined) headers.authorization = `Bearer ${this.deps.token}`;
      const res = await this.deps.fetch(this.url, { method: 'POST', headers, body: JSON.stringify(body), signal: controller.signal });
      const text = await res.text().catch(() => '');
      if (!res.ok) {
        // The orchestrator says why (a revoked credential, a moved control URL): operators read it here.
        let reason: string | undefined;
        try {
          reason = (JSON.parse(text) as { error?: { message?: string } }).error?.message;
        } catch {
          reason = undefined;
        }
        this.deps.logger.warn({ status: res.status, url: this.url, reason }, 'heartbeat refused by the orchestrator');
        return false;
      }
      this.deps.logger.debug({ url: this.url }, 'heartbeat sent');
      return true;
    } catch (err) {
      const reason = controller.signal.aborted ? `no answer within ${this.timeoutMs} ms` : (err as Error).message;
      this.deps.logger.warn({ url: this.url, reason }, 'heartbeat failed');
      return false;
    } finally {
      this.deps.timers.clearTimeout(timeout);
    }
  }
}
