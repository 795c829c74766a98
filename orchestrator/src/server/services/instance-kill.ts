// Kill (issue 24): SIGKILL for a stop that hangs. A kill must not queue behind
// the command it is meant to end, so it takes one of two paths:
// - an action that stops the container is in progress (state stopping,
//   deleting, archiving or update): the container is killed at once through
//   the driver (the host does not queue it behind its own per-instance lock),
//   and the action in progress sees its container gone and records the
//   outcome itself (its stop answers "killed on request");
// - nothing is in progress: a durable `stop` command whose method is SIGKILL
//   (payload `kill: true`), through the same pipeline, checks and history as a
//   stop (a stopped instance is a no-op).
// The route audits both (instance.kill).

import type { Host, Instance, InstanceState } from '../../domain/index.js';
import { KILL_ENDS_ACTION_IN, type Actor } from '../../lifecycle/actions.js';
import { AppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { HostDriver } from '../drivers/host-driver.js';
import type { LifecycleService } from './lifecycle-service.js';

export interface KillDeps {
  host(id: string): Promise<Host | undefined>;
  driver: Pick<HostDriver, 'kill'>;
  lifecycle: Pick<LifecycleService, 'find' | 'request'>;
  logger: Logger;
}

export interface KillResult {
  id: string;
  /** The action the kill ended (`ended`), or the kill's own stop command; null for a no-op. */
  commandId: string | null;
  state: InstanceState;
  /** True: the container was killed now and `commandId` is the action in progress it ended. */
  ended?: boolean;
  /** With `ended`: false when the container was not running any more. */
  killed?: boolean;
  noop?: string;
}

export async function killInstance(deps: KillDeps, idOrName: string, actor: Actor, opts: { requestId: string }): Promise<KillResult> {
  const instance = await deps.lifecycle.find(idOrName);
  const active = instance.activeAction;
  if (active) {
    if (!KILL_ENDS_ACTION_IN.includes(instance.state)) {
      throw new AppError(
        'INSTANCE_BUSY',
        `instance ${instance.name} is busy: ${active.kind} is in progress (${instance.state}); a kill ends only an action that stops the server`,
        { details: { inProgress: active.kind, commandId: active.commandId } },
      );
    }
    return endInProgress(deps, instance, actor, opts);
  }
  const result = await deps.lifecycle.request(instance.id, 'stop', actor, { requestId: opts.requestId, payload: { kill: true } });
  return { id: instance.id, commandId: result.commandId, state: result.state, ...(result.noop ? { noop: result.noop } : {}) };
}

async function endInProgress(deps: KillDeps, instance: Instance, actor: Actor, opts: { requestId: string }): Promise<KillResult> {
  if (!instance.hostId) throw new AppError('INSTANCE_NOT_RUNNING', `instance ${instance.name} is on no host; there is nothing to kill`);
  const host = await deps.host(instance.hostId);
  if (!host) throw new AppError('HOST_NOT_FOUND', `host ${instance.hostId} of instance ${instance.name} is not known`);
  const commandId = instance.activeAction?.commandId ?? null;
  const answer = await deps.driver.kill(host, instance.id, { requestId: opts.requestId, ...(commandId ? { commandId } : {}) });
  deps.logger.warn(
    { instanceId: instance.id, commandId, inProgress: instance.activeAction?.kind, killed: answer.killed, actor: actor.name },
    'instance killed during the action in progress',
  );
  return { id: instance.id, commandId, state: instance.state, ended: true, killed: answer.killed };
}
