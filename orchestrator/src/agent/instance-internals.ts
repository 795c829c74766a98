// What replace.ts and removal.ts use of the instance service, in its own module
// so those steps depend on this contract and not on instance-service.ts (which
// imports them): no import cycle.

import type { InstanceEndpoint } from '../contracts/agent-api.js';
import type { Logger } from '../shared/logger.js';
import type { CreateInstanceRequest } from './container-config.js';
import type { LayerCache, RuntimeDirectories } from './contracts.js';
import type { PortAllocator } from './port-allocator.js';
import type { PowerDeps, RconConnect } from './power.js';
import type { ContainerDetails, ContainerRuntime, ContainerState } from './runtime.js';

/** The slice of a logger the service uses; a request's child logger fits. */
export type Log = Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>;

export interface InstanceServiceOptions {
  agentId: string;
  orchestratorUrl: string;
  gameAddress: string;
  gameBindAddress: string;
  /** `TZ` of `wings`-layout containers (Wings' system timezone); default UTC. */
  timezone?: string;
  defaultStopTimeoutSeconds: number;
  runtime: ContainerRuntime;
  layers: LayerCache;
  directories: RuntimeDirectories;
  ports: PortAllocator;
  logger: Logger;
  /** RCON transport; defaults to a TCP connection to the container's network address. */
  rconConnect?: RconConnect;
}

/** What replace.ts and removal.ts use of the service (all called under the instance lock). */
export interface InstanceInternals {
  readonly deps: InstanceServiceOptions;
  readonly powerDeps: PowerDeps;
  findOwned(instanceId: string): Promise<ContainerDetails | undefined>;
  /** Creates the container on the existing runtime directory, starting it when asked. */
  placeContainer(
    instanceId: string,
    req: Omit<CreateInstanceRequest, 'layers'>,
    options: { preferredPort?: number; avoidPort?: number; start: boolean },
    log: Log,
  ): Promise<InstanceEndpoint>;
  endpoint(c: ContainerDetails, state?: ContainerState): InstanceEndpoint;
  /** The one start step: the config-file edits its labels carry, then the engine's start. */
  startContainer(instanceId: string, containerId: string, labels: Readonly<Record<string, string>>, log: Log): Promise<void>;
  /** Chooses and holds a replacement container's port while the old container still exists (PORT_RANGE_EXHAUSTED when none is free). */
  promisePort(instanceId: string, options: { preferred?: number; avoid?: number; freed?: number }): Promise<number>;
  releasePromised(instanceId: string): void;
}
