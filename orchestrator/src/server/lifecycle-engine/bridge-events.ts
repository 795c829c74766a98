// The in-container bridge's events: a container proves itself with its own
// per-instance token (ENDERCLOUD_INSTANCE_TOKEN) and reports SERVER_READY,
// which the `bridge` readiness probe reads and which moves a starting or
// degraded instance online.

import { AppError } from '../../shared/errors.js';
import { secretsEqual } from '../../shared/http.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { hashToken } from '../services/instance-config.js';
import { formatAddress } from '../registry/registry-view.js';
import { moveInstance } from './instance-transitions.js';
import type { BridgeSignals } from './readiness-prober.js';

export class BridgeEvents {
  constructor(private readonly deps: { store: Store; clock: Clock; signals: BridgeSignals }) {}

  /** SERVER_READY from the container; `endpoint` is its ENDERCLOUD_REPORTED_ENDPOINT ("host:port"). */
  async serverReady(instanceId: string, token: string | undefined, endpoint: string | undefined): Promise<void> {
    const { store, clock, signals } = this.deps;
    const instance = await store.instances.get(instanceId);
    if (!instance || !instance.bridgeTokenHash || token === undefined || !secretsEqual(hashToken(token), instance.bridgeTokenHash)) {
      throw new AppError('UNAUTHORIZED', 'missing or wrong instance token (ENDERCLOUD_INSTANCE_TOKEN)');
    }
    const reported = endpoint ? parseEndpoint(endpoint) : undefined;
    if (reported) {
      // A container may only confirm where players reach it: its host's game address and its own published port.
      // Anything else would let a tenant's server aim the router and the probes at another address (issue 26).
      const host = instance.hostId ? await store.hosts.get(instance.hostId) : undefined;
      const allowed = host && instance.hostPort !== null ? { host: host.gameAddress, port: instance.hostPort } : undefined;
      if (!allowed || reported.host !== allowed.host || reported.port !== allowed.port)
        throw new AppError(
          'VALIDATION_FAILED',
          `body/endpoint ${endpoint} is not this instance's published endpoint` +
            (allowed ? ` (${formatAddress(allowed.host, allowed.port)})` : ' (it has none yet)') +
            ': a container may report only its host game address and its own published port',
          { details: { field: 'endpoint' } },
        );
    }
    const now = clock.now();
    signals.report(instance.id, now);
    const patch = reported ? { endpoint: reported } : {};
    if (instance.state === 'starting' || instance.state === 'degraded') {
      await moveInstance(store, instance, 'online', { now, reason: 'the server reported SERVER_READY', patch });
    } else if (reported) {
      await store.instances.update(instance.id, patch, { now });
    }
  }
}

function parseEndpoint(value: string): { host: string; port: number } {
  const i = value.lastIndexOf(':');
  const port = Number(value.slice(i + 1));
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new AppError('VALIDATION_FAILED', `body/endpoint has no valid port: ${value}`);
  return { host: value.slice(0, i).replace(/^\[|\]$/g, ''), port };
}
