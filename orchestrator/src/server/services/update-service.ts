// Game-server image updates (docs/lifecycle.md "Image updates"): the plan (resolve current and
// candidate images through the agent, compatibility and disk checks, changes
// and warnings), the confirmed request (persisted `update` action), and the
// worker's run: optional safety backup, graceful stop, replace with the same
// configuration plus the new image, readiness check, and rollback to the
// previous image/configuration on failure. Player data is never touched.
// Nothing triggers an update by itself: automatic updates are off.

import type { Host, Instance, JsonObject, TemplateSpec } from '../../domain/index.js';
import type { Actor } from '../../lifecycle/actions.js';
import { AppError } from '../../shared/errors.js';
import type { Store } from '../../store/store.js';
import type { UpdatePlanAnswer } from '../../contracts/public-api/answers.js';
import type { ImageInfo } from '../drivers/host-driver.js';
import type { Clock } from '../clock.js';
import type { LifecycleService } from './lifecycle-service.js';
import { capability, type HostDriver } from '../drivers/host-driver.js';
import { updateImage } from '../../eggs/image-choice.js';

/** How the plan resolves an image on the instance's host: its driver's image capability. */
export type ImageResolver = Pick<HostDriver, 'images'>;

/** The public answer (contracts/public-api/answers.ts), with the full image inspections the orchestrator holds. */
export type UpdatePlan = Omit<UpdatePlanAnswer, 'current' | 'candidate'> & { current: ImageInfo; candidate: ImageInfo };

/** Pure: the compatibility checks, changes and warnings of one candidate image. */
export function evaluateUpdate(input: {
  instance: Pick<Instance, 'id' | 'name' | 'state' | 'user' | 'containerConfig'>;
  template: TemplateSpec | undefined;
  current: ImageInfo;
  candidate: ImageInfo;
  diskFreeBytes: number | null;
}): UpdatePlan {
  const { instance, current, candidate, diskFreeBytes } = input;
  const checks: UpdatePlan['checks'] = [];
  const warnings: string[] = [];
  const changes: string[] = [];
  const sameImage = current.id === candidate.id;
  changes.push(`image ${current.ref} → ${candidate.ref}`);
  changes.push(
    sameImage
      ? 'the candidate has the same content id: nothing changes in the image'
      : `content ${short(current.id)} → ${short(candidate.id)}`,
  );
  if (candidate.created && current.created && candidate.created < current.created)
    warnings.push(
      `the candidate image is older (${candidate.created}) than the current one (${current.created}): a downgrade may not read newer world data`,
    );
  // The container user never changes: an instance without a fixed user runs as the image's USER.
  if (instance.user.mode === 'image') {
    const same = current.user === null || candidate.user === null || current.user === candidate.user;
    checks.push({
      name: 'container user',
      ok: same,
      detail: same
        ? 'the image user is unchanged (or unknown)'
        : `the image user changes from ${JSON.stringify(current.user)} to ${JSON.stringify(candidate.user)}; file ownership would break`,
    });
  } else {
    checks.push({
      name: 'container user',
      ok: true,
      detail: `fixed by the instance (${instance.user.mode}); the image USER does not apply`,
    });
  }
  checks.push({
    name: 'template and readiness',
    ok: input.template !== undefined,
    detail: input.template
      ? `template, readiness (${input.template.readiness.kind}) and stop behaviour are kept; only the image changes`
      : 'the template of this instance is missing',
  });
  if (diskFreeBytes === null) {
    warnings.push('the host reported no free disk space; the disk check was skipped');
  } else if (candidate.sizeBytes === null) {
    checks.push({
      name: 'disk space',
      ok: diskFreeBytes > 0,
      detail: `${diskFreeBytes} bytes free on the host; the image size is unknown`,
    });
  } else {
    const needed = candidate.pulled || sameImage ? 0 : candidate.sizeBytes;
    checks.push({
      name: 'disk space',
      ok: diskFreeBytes >= needed,
      detail: `${diskFreeBytes} bytes free on the host, the image takes ${candidate.sizeBytes}`,
    });
  }
  warnings.push('mods and plugins are not checked against the new server version; read their release notes');
  return {
    instanceId: instance.id,
    name: instance.name,
    state: instance.state,
    current,
    candidate,
    sameImage,
    compatible: checks.every((c) => c.ok),
    checks,
    changes,
    warnings,
    diskFreeBytes,
    automaticUpdates: 'off',
  };
}

function short(id: string): string {
  return id.replace(/^sha256:/, '').slice(0, 12);
}

export interface UpdateServiceOptions {
  store: Store;
  clock: Clock;
  lifecycle: LifecycleService;
  images: ImageResolver;
}

/** The API side: the plan and the confirmed, persisted request. */
export class UpdateService {
  constructor(private readonly deps: UpdateServiceOptions) {}

  /** `candidate`: an image reference, or the label of one of the template's image choices (`images`). */
  async plan(idOrName: string, candidate: string): Promise<UpdatePlan> {
    const instance = await this.deps.lifecycle.find(idOrName);
    const template = await this.deps.lifecycle.templateOf(instance);
    const candidateRef = updateImage(template, candidate);
    const host = await this.hostOf(instance);
    const current = await this.resolve(host, instance.containerConfig.image);
    return evaluateUpdate({
      instance,
      template,
      current,
      candidate: await this.resolve(host, candidateRef),
      diskFreeBytes: host.resources.diskBytes ?? null,
    });
  }

  async request(
    idOrName: string,
    body: { image: string; confirm?: boolean; backup?: boolean },
    actor: Actor,
    requestId: string,
  ): Promise<{ commandId: string | null; state: string; plan: UpdatePlan }> {
    if (body.confirm !== true) {
      throw new AppError(
        'CONFIRMATION_REQUIRED',
        `an update replaces the container of instance ${idOrName}: read GET /instances/${idOrName}/update-plan?image=… and send {"image", "confirm": true}`,
      );
    }
    const plan = await this.plan(idOrName, body.image);
    if (!plan.compatible) {
      const failed = plan.checks
        .filter((c) => !c.ok)
        .map((c) => `${c.name}: ${c.detail}`)
        .join('; ');
      throw new AppError('VALIDATION_FAILED', `image ${body.image} is not compatible with instance ${plan.name}: ${failed}`, {
        details: { checks: plan.checks as unknown as JsonObject[] },
      });
    }
    const image = plan.candidate.ref;
    const payload: JsonObject = { image, backup: body.backup === true, previousImage: plan.current.ref, candidateId: plan.candidate.id };
    const result = await this.deps.lifecycle.request(plan.instanceId, 'update', actor, {
      requestId,
      payload,
      reason: `update to ${image}${image === body.image ? '' : ` (${body.image})`} requested by ${actor.name}`,
    });
    return { commandId: result.commandId, state: result.state, plan };
  }

  /** Resolves locally first (tags built on the host), pulling only when absent. */
  private async resolve(host: Host, ref: string): Promise<ImageInfo> {
    try {
      return await capability(this.deps.images.images, 'image inspection', host).inspectImage(host, ref, { pull: false });
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'IMAGE_NOT_FOUND')) throw err;
      return capability(this.deps.images.images, 'image inspection', host).inspectImage(host, ref, { pull: true });
    }
  }

  private async hostOf(instance: Instance): Promise<Host> {
    const host = instance.hostId ? await this.deps.store.hosts.get(instance.hostId) : undefined;
    if (!host) throw new AppError('HOST_UNAVAILABLE', `instance ${instance.name} is on no registered host`);
    if (host.status === 'OFFLINE') throw new AppError('HOST_UNAVAILABLE', `host ${host.id} is OFFLINE; images cannot be resolved`);
    return host;
  }
}
