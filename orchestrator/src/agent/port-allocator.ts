// Game port choice: the first port of the range that no container holds or has
// been promised and no host listener occupies. The choice itself is pure; the
// allocator adds the I/O (runtime inventory, bind probe). Callers hold the
// agent's create lock around allocate() and the container creation.

import { createServer } from 'node:net';
import type { PortRange } from '../shared/config.js';
import { AppError } from '../shared/errors.js';
import type { ContainerRuntime } from './runtime.js';

export function formatRange(range: PortRange): string {
  return `${range.first}-${range.last}`;
}

/** The first port of the range not in `used`; PORT_RANGE_EXHAUSTED names the range otherwise. */
export function chooseFreePort(range: PortRange, used: ReadonlySet<number>): number {
  for (let port = range.first; port <= range.last; port++) if (!used.has(port)) return port;
  throw new AppError('PORT_RANGE_EXHAUSTED', `every game port in ${formatRange(range)} is in use on this host`, {
    details: { portRange: formatRange(range) },
  });
}

/** True when nothing on the host listens on address:port (a bind test). */
export type PortProbe = (address: string, port: number) => Promise<boolean>;

export const bindProbe: PortProbe = (address, port) =>
  new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host: address, port, exclusive: true }, () => server.close(() => resolve(true)));
  });

export interface PortAllocatorOptions {
  range: PortRange;
  bindAddress: string;
  runtime: Pick<ContainerRuntime, 'reservedHostPorts'>;
  probe?: PortProbe;
}

export class PortAllocator {
  private readonly probe: PortProbe;

  constructor(private readonly options: PortAllocatorOptions) {
    this.probe = options.probe ?? bindProbe;
  }

  get range(): PortRange {
    return this.options.range;
  }

  /**
   * Chooses a free port; `reserved` adds ports promised by the caller but not
   * yet visible in the runtime. `preferred` (a replaced container's port) wins
   * when it is in the range and free. `freed` are ports the runtime still
   * shows held by a container the caller is about to remove (a replace that
   * chooses the new port before it removes the old container).
   */
  async allocate(reserved: ReadonlySet<number> = new Set(), preferred?: number, freed: ReadonlySet<number> = new Set()): Promise<number> {
    const used = new Set([...(await this.options.runtime.reservedHostPorts())].filter((p) => !freed.has(p)));
    for (const p of reserved) used.add(p);
    const { first, last } = this.options.range;
    if (
      preferred !== undefined &&
      preferred >= first &&
      preferred <= last &&
      !used.has(preferred) &&
      (await this.probe(this.options.bindAddress, preferred))
    ) {
      return preferred;
    }
    // Bounded: each iteration marks one more port of the range used.
    for (let attempts = 0; attempts <= last - first; attempts++) {
      const port = chooseFreePort(this.options.range, used);
      if (await this.probe(this.options.bindAddress, port)) return port;
      used.add(port);
    }
    return chooseFreePort(this.options.range, used);
  }
}
