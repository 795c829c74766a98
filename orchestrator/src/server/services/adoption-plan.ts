// Adoption of an unclaimed container, pure: whether a reported container may
// join a group variant (its ownership labels must name exactly that pair), and
// the instance record that describes the container as it is — lifecycle state
// from Docker's state, image, labels, user and endpoint as reported — so that
// adopting never changes the container or its data.

import type {
  ContainerUserSpec,
  DesiredState,
  Endpoint,
  Instance,
  InstanceState,
  ObservedState,
  PendingChange,
} from '../../domain/index.js';
import { fail, ok, type Checked } from '../../lifecycle/result.js';
import { REDACTED } from '../../lifecycle/settings.js';
import { AppError } from '../../shared/errors.js';
import { PENDING_SECRET_PREFIX } from './instance-config.js';

/** What the agent's inventory says about the container (AgentInventoryEntry's relevant part). */
export interface ReportedContainer {
  instanceId: string;
  containerId: string;
  containerName: string;
  groupId: string | null;
  variantId: string | null;
  sessionId?: string | null;
  hostPort: number | null;
  state: string;
  exitCode?: number | null;
  image?: string;
  labels?: Record<string, string>;
  /** "uid:gid", a user name, or null/"" for the image's own user; absent when the agent does not report it. */
  user?: string | null;
}

/**
 * The container's orchestrator.group / orchestrator.variant labels must equal
 * the requested pair: a container made for another group carries that group's
 * template, layers and data, so adopting it elsewhere is unsafe.
 */
export function checkAdoptionLabels(c: ReportedContainer, groupId: string, variantId: string): Checked<void> {
  if (c.groupId === null || c.variantId === null) {
    return fail(
      new AppError(
        'CONFLICT',
        `container ${c.containerName} of instance ${c.instanceId} carries no orchestrator.group/orchestrator.variant labels; it was not made for a group variant and cannot be adopted`,
      ),
    );
  }
  if (c.groupId !== groupId || c.variantId !== variantId) {
    return fail(
      new AppError(
        'CONFLICT',
        `container ${c.containerName} of instance ${c.instanceId} was made for group ${c.groupId} variant ${c.variantId} (labels orchestrator.group/orchestrator.variant), not group ${groupId} variant ${variantId}: adopting it into a different group or variant is unsafe`,
        {
          details: { labelGroupId: c.groupId, labelVariantId: c.variantId },
        },
      ),
    );
  }
  return ok(undefined);
}

export interface AdoptedLifecycle {
  state: InstanceState;
  desiredState: DesiredState;
  observed: ObservedState;
}

/**
 * Running → `starting` (readiness probing decides online or degraded);
 * paused → `paused` (desired paused, so reconciliation leaves it alone);
 * anything else → `stopped`.
 */
export function adoptedLifecycle(c: Pick<ReportedContainer, 'state' | 'exitCode'>, now: number): AdoptedLifecycle {
  const exit = typeof c.exitCode === 'number' ? { exitCode: c.exitCode } : {};
  if (c.state === 'running') return { state: 'starting', desiredState: 'running', observed: { container: 'running', observedAt: now } };
  if (c.state === 'paused') return { state: 'paused', desiredState: 'paused', observed: { container: 'paused', observedAt: now } };
  const known: readonly ObservedState['container'][] = ['created', 'restarting', 'exited', 'dead'];
  const container = known.find((s) => s === c.state) ?? 'exited';
  return { state: 'stopped', desiredState: 'stopped', observed: { container, observedAt: now, ...exit } };
}

/**
 * The container user as a ContainerUserSpec, so a later replacement keeps it:
 * absent (agent does not say) → the template's; empty → the image's own;
 * the configured EnderCloud uid:gid → endercloud; another uid:gid → custom.
 * A user name cannot be recorded faithfully and is refused.
 */
export function adoptedUser(
  reported: string | null | undefined,
  endercloud: { uid: number; gid: number },
  fallback: ContainerUserSpec,
): Checked<ContainerUserSpec> {
  if (reported === undefined) return ok(fallback);
  if (reported === null || reported === '') return ok({ mode: 'image' });
  const m = /^(\d{1,10}):(\d{1,10})$/.exec(reported);
  if (!m) {
    return fail(
      new AppError(
        'CONFLICT',
        `the container runs as user ${JSON.stringify(reported)}, which EnderCloud cannot record (it needs uid:gid or the image's own user); it cannot be adopted`,
      ),
    );
  }
  const uid = Number(m[1]);
  const gid = Number(m[2]);
  if (uid === endercloud.uid && gid === endercloud.gid) return ok({ mode: 'endercloud' });
  return ok({ mode: 'custom', uid, gid });
}

/**
 * The secrets the container was created with belong to the lost database. The
 * freshly generated ones wait as pending secret settings: they reach the
 * container only at its next controlled replacement, and until then no RCON
 * password is used (stops fall back to the stop signal).
 */
export function pendingSecrets(
  secretSettings: Readonly<Record<string, string>>,
  now: number,
): Pick<Instance, 'secretSettings' | 'pendingChanges'> {
  const pending: Record<string, string> = {};
  const changes: PendingChange[] = [];
  for (const [name, value] of Object.entries(secretSettings)) {
    pending[`${PENDING_SECRET_PREFIX}${name}`] = value;
    changes.push({ key: `settings.${name}`, value: REDACTED, mode: 'restart_required', requestedAt: now, secret: true });
  }
  return { secretSettings: pending, pendingChanges: changes };
}

export function adoptedEndpoint(gameAddress: string, hostPort: number | null): Endpoint | null {
  return hostPort === null ? null : { host: gameAddress, port: hostPort };
}

/** The creator's default name (`<group>-<hex>` for `i-<hex>` ids), so an adopted instance usually gets its old name back. */
export function defaultAdoptedName(groupId: string, instanceId: string): string {
  return instanceId.startsWith('i-') ? `${groupId}-${instanceId.slice(2)}` : `${groupId}-${instanceId}`;
}
