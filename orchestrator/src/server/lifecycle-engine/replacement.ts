// The one container replacement of the lifecycle engine: an apply-settings, a
// start that found its port taken, an image update and its rollback all
// replace through replaceContainer (one agent replace of the instance's body,
// the runtime directory kept) and record what they applied with recordRevision.

import type { ContainerConfig, Instance } from '../../domain/index.js';
import type { Store } from '../../store/store.js';
import type { HostDriver, ReplaceOutcome } from '../drivers/host-driver.js';
import { networkSecretFor } from '../provisioning/network-secret.js';
import { agentReplaceBody, revisionConfig } from '../services/instance-config.js';
import type { RunContext } from './run-context.js';

export interface ReplacementDeps {
  driver: Pick<HostDriver, 'replace'>;
  endercloudUser: { uid: number; gid: number };
  /** The network's shared secret, for templates that declare where it goes. */
  networkSecret?: { get(): Promise<string> };
}

/** One agent replace of `instance` (with `config` instead of its applied one when given); pulls a missing image first. */
export async function replaceContainer(
  deps: ReplacementDeps,
  instance: Instance,
  ctx: RunContext,
  opts: { start: boolean; config?: ContainerConfig; newHostPort?: boolean },
): Promise<ReplaceOutcome> {
  const body = agentReplaceBody(instance, ctx.template, {
    endercloudUser: deps.endercloudUser,
    pull: 'missing',
    ...(opts.config ? { config: opts.config } : {}),
    ...(await networkSecretFor(ctx.template, deps.networkSecret)),
  });
  return deps.driver.replace(
    ctx.host,
    instance.id,
    { ...body, start: opts.start, ...(opts.newHostPort ? { newHostPort: true } : {}) },
    ctx.ids,
  );
}

/** The immutable revision of what a replacement applied (`applied` carries the new revision number), pinning the one it replaced. */
export async function recordRevision(
  tx: Store,
  applied: Instance,
  previousRevision: number,
  ctx: RunContext,
  reason: string,
  now: number,
): Promise<void> {
  await tx.revisions.append(
    {
      instanceId: applied.id,
      revision: applied.revision,
      createdAt: now,
      actor: ctx.actor,
      reason,
      config: revisionConfig(applied, ctx.template),
    },
    { pinned: [previousRevision] },
  );
}
