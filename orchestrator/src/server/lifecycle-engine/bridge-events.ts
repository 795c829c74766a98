// The in-container bridge's events: a container proves itself with its own
// per-instance token (ENDERCLOUD_INSTANCE_TOKEN) and reports SERVER_READY,
// which the `bridge` readiness probe reads and which moves a starting or
// degraded instance online.

import { AppError } from '../../shared/errors.js';
import { secretsEqual } from '../../shared/http.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { hashToken } from '../services/instance-config.js';
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
    const now = clock.now();
    signals.report(instance.id, now);
    const patch = endpoint ? { endpoint: parseEndpoint(endpoint) } : {};
    if (instance.state === 'starting' || instance.state === 'degraded') {
      await moveInstance(store, instance, 'online', { now, reason: 'the server reported SERVER_READY', patch });
    } else if (endpoint) {
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
