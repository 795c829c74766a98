// Quick reclaim: an orchestrator killed with -9 in the middle of a create,
// restarted on the same data dir (same node id, new incarnation), takes back
// its previous incarnation's claim at once instead of waiting out the 30 s
// command lease: the create completes within a few seconds, one container.

import { rm } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from './support.js';
import {
  heartbeatPump,
  killReplica,
  newTempDir,
  seedCatalog,
  startHaAgent,
  startReplica,
  type HaAgent,
  type Replica,
} from './ha-support.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe('quick reclaim after kill -9', () => {
  it('a create interrupted by kill -9 resumes at once after the restart (well inside the 30 s lease) and makes exactly one container', async () => {
    const agent: HaAgent = await startHaAgent('reclaim-agent');
    cleanups.push(() => agent.close());
    const dataDir = await newTempDir('ec-ha-reclaim-');
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    let current: Replica | undefined;
    const pump = heartbeatPump(agent.url, 'reclaim-agent', () => current?.url);
    cleanups.push(() => pump.stop());
    const env = { ENDERCLOUD_DATA_DIR: dataDir, ENDERCLOUD_COMMAND_LEASE: '30s' };

    const first = await startReplica(env);
    current = first;
    cleanups.push(() => killReplica(first));
    await pump.beat();
    await until(async () => (await first.call('GET', '/hosts/reclaim-agent')).body?.status === 'ONLINE', 'host ONLINE', 15_000);
    await seedCatalog(first);

    const release = agent.holdCreates();
    const created = await first.call('POST', '/instances', { groupId: 'g', variantId: 'v' });
    expect(created.status).toBe(202);
    await until(() => agent.held === 1, 'the create reaching the agent', 15_000);
    current = undefined;
    await killReplica(first);
    // The killed process's request still completes on the agent (it was received): the retry must be idempotent.
    release();

    const restartedAt = Date.now();
    const second = await startReplica(env);
    current = second;
    cleanups.push(() => killReplica(second));
    const done = await until(
      async () => {
        const c = (await second.call('GET', `/commands/${created.body.commandId}`)).body;
        return c?.status === 'succeeded' ? c : undefined;
      },
      'the create to succeed after the restart',
      20_000,
    );
    const tookMs = Date.now() - restartedAt;
    console.log(`[ha-reclaim] create completed ${tookMs} ms after the restart began (command lease 30 s); attempts ${done.attempts}`);
    expect(tookMs).toBeLessThan(15_000);
    expect(done.attempts).toBe(2);
    expect(second.output.join('')).toContain("took back the claims of this node's previous incarnation");
    expect(agent.runtime.containers.size).toBe(1);
    expect(agent.answers.filter((a) => a.method === 'PUT' && a.status === 200).length).toBeGreaterThanOrEqual(1);
  });
});
