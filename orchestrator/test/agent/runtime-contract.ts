// One contract suite for every ContainerRuntime (Nomad's DriverHarness idea):
// the Docker adapter runs it against the real engine (docker-runtime.test.ts),
// the in-memory test double runs it too (memory-runtime.test.ts), so the route
// tests' double keeps the semantics the agent relies on.

import { describe, expect, it } from 'vitest';
import { HostPortTakenError, type ContainerRuntime, type ContainerSpec } from '../../src/agent/runtime.js';

export interface RuntimeHarness {
  runtime: ContainerRuntime;
  /** An image present (or pullable) that runs `command` for a long time. */
  image: string;
  command: string[];
  /** An existing directory for the /data bind. */
  dataHostPath: string;
  /** Labels on every container the suite creates (cleanup selects by them). */
  labels: Record<string, string>;
  /** Two host ports nothing else uses. */
  hostPorts: [number, number];
  /** A container name unique to this run. */
  name(suffix: string): string;
}

export function runtimeContract(title: string, harness: () => RuntimeHarness): void {
  const spec = (h: RuntimeHarness, suffix: string, hostPort: number, extra: Record<string, string> = {}): ContainerSpec => ({
    name: h.name(suffix),
    image: h.image,
    command: h.command,
    env: [['A', '1']],
    labels: { ...h.labels, ...extra, 'orchestrator.host-port': String(hostPort) },
    dataHostPath: h.dataHostPath,
    port: { containerPort: 25565, hostPort, hostIp: '127.0.0.1' },
  });

  describe(`ContainerRuntime contract: ${title}`, () => {
    it('runs a container through create, start, pause, unpause, kill and remove', async () => {
      const h = harness();
      await h.runtime.ensureImage(h.image);
      const { id } = await h.runtime.create(spec(h, 'life', h.hostPorts[0]));
      expect(await h.runtime.inspect(id)).toMatchObject({ id, name: h.name('life'), state: 'created', startedAt: null, exitCode: null });
      await h.runtime.start(id);
      const running = await h.runtime.inspect(h.name('life'));
      expect(running).toMatchObject({ id, state: 'running', image: h.image, startedAt: expect.any(String) });
      expect(running!.address).toEqual(expect.any(String));
      expect(running!.labels).toMatchObject(h.labels);
      await h.runtime.start(id); // starting a running container is harmless
      await h.runtime.pause(id);
      expect((await h.runtime.inspect(id))!.state).toBe('paused');
      await h.runtime.unpause(id);
      expect(await h.runtime.waitForExit(id, 200)).toBe(false);
      await h.runtime.kill(id, 'SIGKILL');
      expect(await h.runtime.waitForExit(id, 10_000)).toBe(true);
      expect(await h.runtime.inspect(id)).toMatchObject({ state: 'exited', exitCode: 137, finishedAt: expect.any(String) });
      await h.runtime.kill(id); // not running: not an error
      await h.runtime.remove(id);
      expect(await h.runtime.inspect(id)).toBeUndefined();
      await h.runtime.remove(id); // missing: not an error
    });

    it('refuses a taken name with CONFLICT and lists by labels', async () => {
      const h = harness();
      await h.runtime.ensureImage(h.image);
      const { id } = await h.runtime.create(spec(h, 'named', h.hostPorts[0], { 'contract.pick': 'me' }));
      await expect(h.runtime.create(spec(h, 'named', h.hostPorts[1]))).rejects.toMatchObject({ code: 'CONFLICT' });
      expect((await h.runtime.list({ ...h.labels, 'contract.pick': 'me' })).map((c) => c.id)).toEqual([id]);
      await h.runtime.remove(id);
    });

    it('reserves labelled and published host ports, and fails a start on a held port with HostPortTakenError', async () => {
      const h = harness();
      await h.runtime.ensureImage(h.image);
      const [p1] = h.hostPorts;
      const first = await h.runtime.create(spec(h, 'port-a', p1));
      expect((await h.runtime.reservedHostPorts()).has(p1)).toBe(true); // labelled, not yet running
      await h.runtime.start(first.id);
      // A second container publishing the same host port (its label names another one).
      const second = await h.runtime.create({ ...spec(h, 'port-b', p1), labels: { ...h.labels } });
      const err = await h.runtime.start(second.id).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(HostPortTakenError);
      await h.runtime.stop(first.id, 1);
      expect(await h.runtime.inspect(first.id)).toMatchObject({ state: 'exited' });
      await h.runtime.remove(second.id);
      await h.runtime.remove(first.id);
    });
  });
}
