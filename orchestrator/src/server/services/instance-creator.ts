// POST /instances: caps, pure placement over ONLINE hosts, and one transaction
// that reserves the memory, writes the instance and persists its create
// command, so concurrent placements never oversubscribe and nothing is
// dispatched that was not first stored.

import { assertEulaAccepted } from '../../eggs/features.js';
import { randomBytes, randomUUID } from 'node:crypto';
import type { Command, ContainerUserSpec, Group, Host, Instance, TemplateVersion, Variant } from '../../domain/index.js';
import { unwrap } from '../../lifecycle/result.js';
import { placeInstance, type PlacementHost } from '../../placement/placement.js';
import { AppError } from '../../shared/errors.js';
import { assertId } from '../../shared/ids.js';
import { normalizeLayerPath } from '../../shared/layer-checksum.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import { validateContainerUser } from '../../lifecycle/settings.js';
import { assertVariablesSettable, type Requester } from '../../eggs/variable-access.js';
import { chosenImage } from '../../eggs/image-choice.js';
import { assertRoom } from './instance-limits.js';
import { buildInstance, creationValues, memoryFor, revisionConfig, type CreationValues } from './instance-config.js';

export interface CreateInstanceRequest {
  groupId: string;
  variantId: string;
  name?: string;
  /** Start the container after creation (default true). */
  start?: boolean;
  /** The container user (`{mode: endercloud|custom|image}`); never editable afterwards. */
  user?: unknown;
  /** Existing data (PUT /imports) put into the instance before its first start. */
  import?: { uploadId: string; destination?: string };
  /** Template variable values (checked before anything is written). */
  settings?: Record<string, unknown>;
  /** Secret variable values: never in an answer, a log line, the history or a revision. */
  secrets?: Record<string, unknown>;
  /** One of the template's image choices (`images`), by label or image; default the template's image. */
  image?: string;
}

/** What a caller adds to the creation's transaction (an approval deciding its request): a throw rolls the creation back. */
export type WithinCreation = (tx: Store, created: { instance: Instance; command: Command }) => Promise<void>;

/** What create needs of the import store: whether an upload exists. */
export interface ImportLookup {
  get(uploadId: string): Promise<unknown>;
}

export interface CreationPlan {
  group: Group;
  variant: Variant;
  template: TemplateVersion;
  /** The name asked for; undefined: create generates one. */
  name: string | undefined;
  nameTaken: boolean;
  values: CreationValues;
  memoryMb: number;
  user: ContainerUserSpec | undefined;
  /** The image choice asked for (a label or image of the template's `images`), resolved; undefined: the template's image. */
  image: string | undefined;
  start: boolean;
  imported: { uploadId: string; destination: string } | undefined;
}

/**
 * The group, its variant and the variant's template, for a create, a preview
 * or an adoption: one lookup, one error code per missing thing
 * (GROUP_NOT_FOUND, VALIDATION_FAILED on body/variantId, TEMPLATE_NOT_FOUND).
 */
export async function resolveVariant(
  store: Store,
  groupId: string,
  variantId: string,
): Promise<{ group: Group; variant: Variant; template: TemplateVersion }> {
  const group = await store.groups.get(groupId);
  if (!group) throw new AppError('GROUP_NOT_FOUND', `group ${groupId} does not exist`);
  const variant = group.variants.find((v) => v.id === variantId);
  if (!variant) {
    throw new AppError(
      'VALIDATION_FAILED',
      `body/variantId: group ${group.id} has no variant ${variantId} (it has ${group.variants.map((v) => v.id).join(', ') || 'none'})`,
      {
        details: { field: 'variantId' },
      },
    );
  }
  const template = await store.templates.get(variant.template.name, variant.template.version);
  if (!template)
    throw new AppError(
      'TEMPLATE_NOT_FOUND',
      `template ${variant.template.name} version ${variant.template.version} of variant ${variant.id} does not exist`,
    );
  return { group, variant, template };
}

export interface InstanceCreatorOptions {
  store: Store;
  clock: Clock;
  maxTotalInstances: number | undefined;
  commandMaxAttempts: number;
  onCommandsQueued: () => void;
  generateSecret?: () => string;
  imports?: ImportLookup;
}

/** Another placement may take the chosen host's last memory between our read and reserve. */
const PLACEMENT_ATTEMPTS = 5;

function newInstanceId(): string {
  return `i-${randomBytes(6).toString('hex')}`;
}

export class InstanceCreator {
  constructor(private readonly deps: InstanceCreatorOptions) {}

  /**
   * Everything POST /instances decides before it writes, the same for a
   * preview (instance-preview.ts): the group, variant and template, the
   * variables' access and values (settings, secrets), the name, memory, user
   * and the import. Throws what create would refuse; a taken name is reported
   * (create refuses it, a preview lists it).
   */
  async plan(req: CreateInstanceRequest, principal?: Requester): Promise<CreationPlan> {
    const { store } = this.deps;
    const { group, variant, template } = await resolveVariant(store, req.groupId, req.variantId);
    assertVariablesSettable(principal, template.spec, { settings: req.settings, secrets: req.secrets });
    const name = req.name === undefined ? undefined : assertId('name', req.name);
    const nameTaken = name !== undefined && (await store.instances.getByName(name)) !== undefined;
    const values = creationValues(template.spec, req.settings, req.secrets);
    const user = req.user === undefined ? undefined : unwrap(validateContainerUser(req.user));
    const image = req.image === undefined ? undefined : chosenImage(template.spec, req.image);
    const imported = req.import === undefined ? undefined : await this.checkImport(req.import);
    return {
      group,
      variant,
      template,
      name,
      nameTaken,
      values,
      memoryMb: memoryFor(variant, template.spec),
      user,
      image,
      start: req.start ?? true,
      imported,
    };
  }

  /**
   * `principal`: who asks (absent: nobody with an operator scope); operator-only variables in `settings`/`secrets` need one.
   * `within`: more writes in the same transaction, after the instance and its command (all or nothing).
   */
  async create(
    req: CreateInstanceRequest,
    actor: string,
    requestId: string,
    principal?: Requester,
    within?: WithinCreation,
  ): Promise<{ instance: Instance; command: Command }> {
    const { store, clock } = this.deps;
    const { group, variant, template, nameTaken, values, memoryMb, user, image, start, imported, ...planned } = await this.plan(
      req,
      principal,
    );
    const id = newInstanceId();
    const name = planned.name ?? `${group.id}-${id.slice(2)}`;
    if (nameTaken) throw new AppError('CONFLICT', `an instance named ${name} already exists`);
    const commandId = `cmd-${randomUUID()}`;

    const result = await store.transaction(async (tx) => {
      // Every instance limit, counted under the placement lock (held to commit): concurrent creates can never exceed one.
      await assertRoom(tx, group, template, this.deps.maxTotalInstances);
      const hostId = await this.reserve(tx, group.id, group.placement, memoryMb);
      const now = clock.now();
      const draft = buildInstance({
        id,
        name,
        group,
        variant,
        template,
        hostId,
        now,
        desiredState: start ? 'running' : 'stopped',
        ...(this.deps.generateSecret ? { generateSecret: this.deps.generateSecret } : {}),
        ...(user ? { user } : {}),
        ...(image ? { image } : {}),
        values,
      });
      // An egg with the eula feature starts only once the operator accepted (its effective EULA value, variant env included).
      if (start) assertEulaAccepted(template.spec, draft.containerConfig.env, name);
      const instance = await tx.instances.create(draft);
      await tx.revisions.append({
        instanceId: id,
        revision: 1,
        createdAt: now,
        actor,
        reason: 'created',
        config: revisionConfig(instance, template.spec),
      });
      await tx.history.append({
        instanceId: id,
        at: now,
        from: null,
        to: 'installing',
        reason: `placed on host ${hostId}`,
        actor,
        commandId,
        details: { hostId, memoryMb, ...(imported ? { import: imported } : {}) },
      });
      const command = await tx.commands.create(
        {
          id: commandId,
          kind: 'create',
          instanceId: id,
          hostId,
          payload: { start, ...(imported ? { import: imported } : {}) },
          requestId,
          maxAttempts: this.deps.commandMaxAttempts,
        },
        now,
      );
      await within?.(tx, { instance, command });
      return { instance, command };
    });
    this.deps.onCommandsQueued();
    return result;
  }

  /** The upload must exist; the destination is relative to the instance directory ('.' = its root). */
  private async checkImport(imp: { uploadId: string; destination?: string }): Promise<{ uploadId: string; destination: string }> {
    const raw = imp.destination ?? '.';
    let destination = '.';
    if (raw !== '.' && raw !== './' && raw !== '') {
      const checked = normalizeLayerPath(raw);
      if ('reason' in checked) throw new AppError('UNSAFE_PATH', `body/import/destination ${JSON.stringify(raw)} ${checked.reason}`);
      destination = checked.path;
    }
    if (!this.deps.imports || !(await this.deps.imports.get(imp.uploadId)))
      throw new AppError('NOT_FOUND', `import upload ${imp.uploadId} does not exist (upload it with PUT /api/v1/imports)`);
    return { uploadId: imp.uploadId, destination };
  }

  private async reserve(tx: Store, groupId: string, strategy: 'packed' | 'distributed', memoryMb: number): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const hosts = await placementHosts(tx, await tx.hosts.list({ statuses: ['ONLINE'] }), groupId, strategy);
      const hostId = unwrap(placeInstance(hosts, { groupId, memoryMb }, strategy));
      if (await tx.hosts.reserveMemory(hostId, memoryMb)) return hostId;
      if (attempt >= PLACEMENT_ATTEMPTS) {
        throw new AppError('NO_CAPACITY', `could not reserve ${memoryMb} MiB: other placements kept taking the free memory; try again`);
      }
    }
  }
}

/** Hosts as placement sees them; `distributed` also counts the group's instances per host. */
export async function placementHosts(
  tx: Store,
  hosts: readonly Host[],
  groupId: string,
  strategy: 'packed' | 'distributed',
): Promise<PlacementHost[]> {
  const groupCounts = strategy === 'distributed' ? await groupCountsByHost(tx, groupId) : undefined;
  return hosts.map((h) => toPlacementHost(h, groupId, groupCounts));
}

async function groupCountsByHost(tx: Store, groupId: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  for (const i of await tx.instances.list({ groupId })) {
    // A failed create holds nothing on its host (no container, no reservation): it does not count.
    if (i.hostId && !(i.state === 'error' && !i.memoryReserved)) counts.set(i.hostId, (counts.get(i.hostId) ?? 0) + 1);
  }
  return counts;
}

function toPlacementHost(h: Host, groupId: string, counts: Map<string, number> | undefined): PlacementHost {
  const p: PlacementHost = { id: h.id, status: h.status, memoryMb: h.resources.memoryMb, memoryReservedMb: h.memoryReservedMb };
  if (counts) p.groupCounts = { [groupId]: counts.get(h.id) ?? 0 };
  return p;
}
