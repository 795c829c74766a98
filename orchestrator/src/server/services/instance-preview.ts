// The canonical deployment preview (creation step 5, docs/lifecycle.md "Creating an instance"): what
// POST /instances would create from the same body — resolved template and
// variant configuration, env (secrets never shown), resources, ports,
// readiness, stop behaviour, data paths, user, the host placement would choose
// now and the caps left — computed without writing anything.

import { capRefusal, placeInstance, type GroupCaps } from '../../placement/placement.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { CreateInstanceRequest, InstanceCreator } from './instance-creator.js';
import type { Requester } from '../../eggs/variable-access.js';
import { buildInstance, INSTANCE_TOKEN_ENV } from './instance-config.js';
import { roomsFor } from './instance-limits.js';
import { readinessOf } from '../lifecycle-engine/readiness-prober.js';

export interface InstancePreviewOptions {
  store: Store;
  /** The creator's plan (InstanceCreator.plan): one decision for a preview and a create. */
  planner: Pick<InstanceCreator, 'plan'>;
  clock: Clock;
  maxTotalInstances: number | undefined;
}

const REDACTED = '<redacted>';

export class InstancePreviewer {
  constructor(private readonly deps: InstancePreviewOptions) {}

  /** `principal`: who asks, as for POST /instances (operator-only variables need an operator). */
  async preview(req: CreateInstanceRequest, principal?: Requester): Promise<Record<string, unknown>> {
    const { store } = this.deps;
    // The same plan POST /instances acts on: its refusals (settings, secrets, import, user) are the preview's.
    const {
      group,
      variant,
      template,
      name: asked,
      nameTaken,
      values,
      user,
      image,
      start,
      imported,
    } = await this.deps.planner.plan(req, principal);
    const name = asked ?? `${group.id}-<generated>`;

    // The same resolution POST /instances stores, with the given secrets and the generated ones never shown.
    const draft = buildInstance({
      id: 'i-preview',
      name,
      group,
      variant,
      template,
      hostId: '-',
      now: this.deps.clock.now(),
      desiredState: start ? 'running' : 'stopped',
      generateSecret: () => REDACTED,
      ...(user ? { user } : {}),
      ...(image ? { image } : {}),
      values: { settings: values.settings, secrets: Object.fromEntries(Object.keys(values.secrets).map((k) => [k, REDACTED])) },
    });
    const spec = template.spec;
    const secretVars = spec.variables.filter((v) => v.secret);
    const env: Record<string, string> = { ...draft.containerConfig.env };
    for (const v of secretVars) env[v.env ?? v.name] = REDACTED;
    env[INSTANCE_TOKEN_ENV] = REDACTED;

    const caps: GroupCaps = {
      ...group.caps,
      ...(this.deps.maxTotalInstances !== undefined ? { maxTotalInstances: this.deps.maxTotalInstances } : {}),
    };
    // A read-only transaction: the count takes the placement lock, released at once.
    const [counts, rooms] = await store.transaction(
      async (tx) => [await tx.instances.countForCaps(group.id), await roomsFor(tx, group, template, this.deps.maxTotalInstances)] as const,
    );
    const full = rooms.find((l) => l.room === 0);
    const templateCap = rooms.find((l) => l.template !== undefined);
    const hosts = await store.hosts.list({ statuses: ['ONLINE'] });
    const groupCounts = new Map<string, number>();
    if (group.placement === 'distributed')
      for (const i of await store.instances.list({ groupId: group.id }))
        if (i.hostId) groupCounts.set(i.hostId, (groupCounts.get(i.hostId) ?? 0) + 1);
    const placed = placeInstance(
      hosts.map((h) => ({
        id: h.id,
        status: h.status,
        memoryMb: h.resources.memoryMb,
        memoryReservedMb: h.memoryReservedMb,
        ...(group.placement === 'distributed' ? { groupCounts: { [group.id]: groupCounts.get(h.id) ?? 0 } } : {}),
      })),
      { groupId: group.id, memoryMb: draft.memoryMb },
      group.placement,
    );
    const host = placed.ok ? hosts.find((h) => h.id === placed.value) : undefined;
    const readiness = readinessOf(spec);
    const problems = [
      ...(nameTaken ? [`an instance named ${name} already exists`] : []),
      ...(full ? [capRefusal(group.id, full).message] : []),
      ...(placed.ok ? [] : [placed.error.message]),
    ];

    return {
      preview: true,
      wouldCreate: problems.length === 0,
      problems,
      name,
      group: { id: group.id, kind: group.kind, placement: group.placement },
      variant: variant.id,
      template: { name: template.name, version: template.version },
      image: draft.containerConfig.image,
      ...(spec.images ? { imageChoices: spec.images } : {}),
      // Wings' layout (egg templates): the image's entrypoint runs STARTUP in /home/container.
      ...(spec.startup !== undefined ? { startup: spec.startup, serverDirectory: '/home/container' } : {}),
      labels: draft.containerConfig.labels,
      layers: draft.containerConfig.layers.map((l) => ({ id: l.id, checksum: l.checksum })),
      env,
      settings: draft.settings,
      secrets: [...secretVars.map((v) => v.name), INSTANCE_TOKEN_ENV].map((n) => ({
        name: n,
        value: REDACTED,
        given: values.secrets[n] !== undefined,
        generatedAtCreation: values.secrets[n] === undefined && draft.secretSettings[n] !== undefined,
      })),
      resources: draft.containerConfig.resources,
      ports: {
        containerPort: draft.containerConfig.containerPort,
        hostPort: host ? `chosen by the agent from ${host.portRange.first}-${host.portRange.last} on ${host.gameAddress}` : null,
        ...(spec.stop.rcon ? { rcon: { port: spec.stop.rcon.port, published: false } } : {}),
      },
      readiness,
      stop: {
        signal: spec.stop.signal,
        timeoutMs: spec.stop.timeoutMs,
        ...(spec.stop.rcon ? { rcon: { port: spec.stop.rcon.port, command: spec.stop.rcon.command ?? 'stop' } } : {}),
      },
      dataPaths: spec.dataPaths,
      technicalPaths: spec.technicalPaths ?? [],
      user: draft.user,
      start,
      import: imported ?? null,
      placement:
        placed.ok && host
          ? { hostId: host.id, memoryMb: draft.memoryMb, memoryFreeMb: host.resources.memoryMb - host.memoryReservedMb }
          : null,
      caps: {
        group: {
          limit: caps.maxInstances ?? null,
          current: counts.group,
          left: caps.maxInstances === undefined ? null : Math.max(0, caps.maxInstances - counts.group),
        },
        total: {
          limit: caps.maxTotalInstances ?? null,
          current: counts.total,
          left: caps.maxTotalInstances === undefined ? null : Math.max(0, caps.maxTotalInstances - counts.total),
        },
        template: templateCap
          ? { name: templateCap.template, limit: templateCap.max, current: templateCap.current, left: templateCap.room }
          : null,
      },
    };
  }
}
