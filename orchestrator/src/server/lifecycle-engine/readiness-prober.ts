// One readiness probe of one instance, per template kind: minecraft (Server
// List Ping, ready when players.max > 0), tcp, http, log (a regex over the
// agent's log tail since the container's current start) and bridge (the
// container reported SERVER_READY). Every probe is bounded by the spec's
// probeTimeoutMs.

import { connect } from 'node:net';
import type { Host, Instance, ResolvedReadinessSpec, TemplateSpec } from '../../domain/index.js';
import { logLinesReady, minecraftStatusReady, validateReadinessSpec } from '../../lifecycle/readiness.js';
import { pingServer } from '../../protocol/status-client.js';
import type { HostDriver } from '../drivers/host-driver.js';

export interface ProbeOutcome {
  ready: boolean;
  detail: string;
  players?: { online: number; max: number };
}

/** SERVER_READY reports from bridge containers (POST /instances/:id/events), in memory. */
export class BridgeSignals {
  private readonly readyAt = new Map<string, number>();

  report(instanceId: string, at: number): void {
    this.readyAt.set(instanceId, at);
  }

  /** Whether the container reported ready since `since` (the current start). */
  readySince(instanceId: string, since: number): boolean {
    return (this.readyAt.get(instanceId) ?? -1) >= since;
  }

  forget(instanceId: string): void {
    this.readyAt.delete(instanceId);
  }
}

/** The template's readiness spec with every default filled; the tcp default when it is unusable. */
export function readinessOf(template: TemplateSpec | undefined): ResolvedReadinessSpec {
  const checked = validateReadinessSpec(template?.readiness ?? { kind: 'tcp', startupTimeoutMs: 120_000 });
  if (checked.ok) return checked.value;
  return { kind: 'tcp', startupTimeoutMs: 120_000, intervalMs: 2000, probeTimeoutMs: 2000, failureThreshold: 3 };
}

export interface ReadinessProberOptions {
  driver: Pick<HostDriver, 'logs'>;
  fetch: typeof fetch;
  bridge: BridgeSignals;
  ping?: typeof pingServer;
}

export class ReadinessProber {
  constructor(private readonly deps: ReadinessProberOptions) {}

  async probe(instance: Instance, spec: ResolvedReadinessSpec, host: Host): Promise<ProbeOutcome> {
    try {
      return await this.run(instance, spec, host);
    } catch (err) {
      return { ready: false, detail: (err as Error).message };
    }
  }

  private async run(instance: Instance, spec: ResolvedReadinessSpec, host: Host): Promise<ProbeOutcome> {
    if (spec.kind === 'bridge') {
      const ready = instance.state === 'online' || this.deps.bridge.readySince(instance.id, instance.stateChangedAt);
      return { ready, detail: ready ? 'SERVER_READY reported' : 'waiting for SERVER_READY' };
    }
    if (spec.kind === 'log') {
      // Only this run's output: a previous run's ready line must not make a new start "online".
      const text = await this.deps.driver.logs(host, instance.id, { tail: 200, sinceStart: true });
      const ready = logLinesReady(spec.pattern, text.split('\n'));
      return { ready, detail: ready ? `log matched ${spec.pattern}` : `no log line matches ${spec.pattern} yet` };
    }
    const endpoint = instance.endpoint;
    if (!endpoint) return { ready: false, detail: 'no published endpoint yet' };
    // Only the game port is published: probes go to it whatever port the spec names inside the container.
    const { host: address, port } = endpoint;
    switch (spec.kind) {
      case 'minecraft': {
        const { status } = await (this.deps.ping ?? pingServer)(address, port, { timeoutMs: spec.probeTimeoutMs });
        const players = { online: Number(status.players?.online ?? 0), max: Number(status.players?.max ?? 0) };
        const ready = minecraftStatusReady(status);
        return {
          ready,
          players,
          detail: ready ? 'status ping answered with players.max > 0' : 'status ping answered with players.max = 0 (still loading)',
        };
      }
      case 'http': {
        const res = await this.deps.fetch(`http://${address.includes(':') ? `[${address}]` : address}:${port}${spec.path}`, {
          signal: AbortSignal.timeout(spec.probeTimeoutMs),
        });
        await res.body?.cancel();
        const ready = spec.expectStatus === undefined ? res.status >= 200 && res.status < 400 : res.status === spec.expectStatus;
        return { ready, detail: `HTTP ${res.status}` };
      }
      default:
        await tcpConnect(address, port, spec.probeTimeoutMs);
        return { ready: true, detail: `TCP connection accepted and held for ${Math.min(TCP_SETTLE_MS, spec.probeTimeoutMs)} ms` };
    }
  }
}

/**
 * How long an accepted connection must stay open to count: Docker's userland
 * proxy accepts on the published port even with no server behind it, then
 * closes within milliseconds (measured ~3 ms on Docker 20.10).
 */
export const TCP_SETTLE_MS = 250;

/** Connects and holds the connection for the settle window; a peer that hangs up in it is not a server. */
export function tcpConnect(host: string, port: number, timeoutMs: number, settleMs = TCP_SETTLE_MS): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port });
    let settle: NodeJS.Timeout | undefined;
    const finish = (err?: Error) => {
      clearTimeout(timer);
      clearTimeout(settle);
      socket.destroy();
      if (err) reject(err);
      else resolve();
    };
    const timer = setTimeout(() => finish(new Error(`TCP connect to ${host}:${port} timed out after ${timeoutMs} ms`)), timeoutMs);
    socket.once('connect', () => {
      settle = setTimeout(() => finish(), Math.min(settleMs, timeoutMs));
    });
    const hungUp = () => finish(new Error(`TCP ${host}:${port} accepted and closed at once (a port proxy with no server behind it)`));
    socket.once('end', hungUp);
    socket.once('close', hungUp);
    socket.once('error', (err) => finish(err));
  });
}
