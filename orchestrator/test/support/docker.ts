// Test-side Docker helpers: one dockerode client for test code, cleanup by
// label, and a guard that fails clearly when no engine is reachable.
// (Product code reaches Docker only through src/agent/docker-runtime.ts.)

import Docker from 'dockerode';

export const DOCKER_SOCKET = process.env.DOCKER_SOCKET ?? '/var/run/docker.sock';

let client: Docker | undefined;
export function docker(): Docker {
  client ??= new Docker({ socketPath: DOCKER_SOCKET });
  return client;
}

export async function assertDockerReachable(): Promise<void> {
  try {
    await docker().ping();
  } catch (err) {
    throw new Error(
      `No Docker engine at ${DOCKER_SOCKET} (${(err as Error).message}). Start dockerd, or run bash .ci/run which installs and starts it.`,
    );
  }
}

/** Removes every container carrying all the given labels (force, with volumes). */
export async function removeContainersByLabel(labels: Record<string, string>): Promise<number> {
  const filters = { label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) };
  const list = await docker().listContainers({ all: true, filters });
  await Promise.all(
    list.map((c) =>
      docker()
        .getContainer(c.Id)
        .remove({ force: true, v: true })
        .catch(() => undefined),
    ),
  );
  return list.length;
}

/** A unique id for one test file's resources (host ids, label values, names). */
export function uniqueId(prefix: string): string {
  return `${prefix}-${process.pid.toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}
