// Container stats against the real engine: a running container that burned
// some CPU reports non-zero CPU seconds and memory (and its limit); a stopped
// or missing one reports nothing; the stats route's collector reads it.

import { tmpdir } from 'node:os';
import { afterAll, describe, expect, it } from 'vitest';
import { DockerRuntime } from '../../src/agent/docker-runtime.js';
import { ownershipLabels } from '../../src/agent/labels.js';
import { collectInstanceStats } from '../../src/agent/stats-routes.js';
import { removeNetwork, randomPortRange } from '../support/agent-harness.js';
import { DOCKER_SOCKET, removeContainersByLabel, uniqueId } from '../support/docker.js';
import { busyboxImage, imageTag } from '../support/images.js';

const RUN = uniqueId('docker-stats');
const TEST_LABEL = { 'endercloud.test-run': RUN };
const NETWORK = `ec-${RUN}`;
const AGENT = `agent-${RUN}`;
const runtime = new DockerRuntime({ socketPath: DOCKER_SOCKET, network: NETWORK });
const ports = randomPortRange(2);

afterAll(async () => {
  await removeContainersByLabel(TEST_LABEL);
  await removeNetwork(NETWORK);
});

async function container(suffix: string, hostPort: number, command: string[]): Promise<string> {
  const labels = {
    ...TEST_LABEL,
    ...ownershipLabels({ agentId: AGENT, instanceId: `i-${suffix}`, groupId: 'g', variantId: 'v', hostPort }),
  };
  const { id } = await runtime.create({
    name: `${RUN}-${suffix}`,
    image: imageTag(busyboxImage),
    command,
    env: [],
    labels,
    memoryBytes: 64 * 1024 * 1024,
    dataHostPath: tmpdir(),
    port: { containerPort: 25565, hostPort, hostIp: '127.0.0.1' },
  });
  return id;
}

describe('DockerRuntime.stats (real engine)', () => {
  it('reports non-zero CPU seconds and memory of a running container, and nothing for a stopped or missing one', async () => {
    // Busy for a moment (CPU), then asleep: the counters only grow.
    const busy = await container('busy', ports.first, [
      'sh',
      '-c',
      'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo done; sleep 3600',
    ]);
    const stopped = await container('stopped', ports.last, ['sleep', '3600']);
    await runtime.start(busy);
    let stats = await runtime.stats(busy);
    for (let i = 0; i < 50 && (stats?.cpuSecondsTotal ?? 0) < 0.05; i++) {
      await new Promise((r) => setTimeout(r, 100));
      stats = await runtime.stats(busy);
    }
    expect(stats).toBeDefined();
    expect(stats!.cpuSecondsTotal).toBeGreaterThan(0);
    expect(stats!.memoryBytes).toBeGreaterThan(0);
    expect(stats!.memoryLimitBytes).toBe(64 * 1024 * 1024);
    expect(stats!.networkRxBytes).toBeGreaterThanOrEqual(0);
    expect(stats!.networkTxBytes).toBeGreaterThanOrEqual(0);

    expect(await runtime.stats(stopped)).toBeUndefined();
    expect(await runtime.stats(`${RUN}-nothing-here`)).toBeUndefined();

    // The route's collector over the real engine: the running container only, under its instance id.
    const answer = await collectInstanceStats({ runtime, agentId: AGENT });
    expect(answer.instances.map((e) => [e.instanceId, e.groupId, e.state])).toEqual([['i-busy', 'g', 'running']]);
    expect(answer.instances[0]!.cpuSecondsTotal).toBeGreaterThan(0);
    expect(answer.instances[0]!.memoryBytes).toBeGreaterThan(0);
  });
});
