// Templates and groups: normalise, check references (layers, template versions)
// against the store, then write. Template versions are immutable.

import { createHash } from 'node:crypto';
import type { Group, LayerRef, TemplateSpec, TemplateVersion } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { canonicalJson } from '../../store/json.js';
import type { Store } from '../../store/store.js';
import type { Clock } from '../clock.js';
import type { GroupBody, TemplateBody } from '../../contracts/catalog.js';
import { normalizeGroup, normalizeTemplate } from '../../contracts/catalog-rules.js';
import { assertVariablesSettable, type Requester } from '../../eggs/variable-access.js';

export class CatalogService {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  private async assertLayersExist(layers: readonly LayerRef[], field: string): Promise<void> {
    for (const [i, ref] of layers.entries()) {
      if (!(await this.store.layers.get(ref.id, ref.checksum))) {
        throw new AppError(
          'LAYER_NOT_FOUND',
          `body/${field}/${i}: layer ${ref.id} with checksum ${ref.checksum} was never uploaded (PUT /api/v1/template-layers/${ref.id})`,
          {
            details: { field: `${field}/${i}` },
          },
        );
      }
    }
  }

  /**
   * Creates a version; the same body again is idempotent, a different one
   * IMMUTABLE (409). `dryRun`: every check, no write (ectl apply --dry-run).
   */
  async putTemplate(
    name: string,
    version: string,
    body: TemplateBody,
    opts: { dryRun?: boolean } = {},
  ): Promise<{ template: TemplateVersion; created: boolean }> {
    const spec = normalizeTemplate(body);
    const specHash = createHash('sha256').update(canonicalJson(spec)).digest('hex');
    const existing = await this.store.templates.get(name, version);
    if (existing) {
      if (existing.specHash === specHash) return { template: existing, created: false };
      throw new AppError(
        'IMMUTABLE',
        `template ${name} version ${version} already exists with a different body; publish a new version instead`,
      );
    }
    await this.assertLayersExist(spec.layers, 'layers');
    const template = { name, version, spec, specHash, createdAt: this.clock.now() };
    if (opts.dryRun) return { template, created: true };
    return this.store.templates.create(template);
  }

  /** What putTemplate would do with this body, writing nothing (the egg import's preview). */
  async previewTemplate(
    name: string,
    version: string,
    body: TemplateBody,
  ): Promise<{ spec: TemplateSpec; outcome: 'create' | 'unchanged' | 'conflict' }> {
    const spec = normalizeTemplate(body);
    const existing = await this.store.templates.get(name, version);
    const specHash = createHash('sha256').update(canonicalJson(spec)).digest('hex');
    return { spec, outcome: !existing ? 'create' : existing.specHash === specHash ? 'unchanged' : 'conflict' };
  }

  /** `dryRun`: every check, no write; `changed` then says whether the put would change the group. */
  /**
   * `principal`: who puts it. A variant's env entry that sets an operator-only variable (by the env
   * name it is passed as; spawns and allocations create from it) needs an operator unless the
   * variant already had it with that value.
   */
  async putGroup(
    id: string,
    body: GroupBody,
    opts: { dryRun?: boolean; principal: Requester },
  ): Promise<{ group: Group; created: boolean; changed: boolean }> {
    const normalized = normalizeGroup(body);
    const existing = await this.store.groups.get(id);
    for (const [i, v] of normalized.variants.entries()) {
      const template = await this.store.templates.get(v.template.name, v.template.version);
      if (!template) {
        throw new AppError(
          'TEMPLATE_NOT_FOUND',
          `body/variants/${i}/template: template ${v.template.name} version ${v.template.version} does not exist`,
          {
            details: { field: `variants/${i}/template` },
          },
        );
      }
      const before = existing?.variants.find((old) => old.id === v.id)?.env ?? {};
      const setsEnv = Object.fromEntries(Object.entries(v.env).filter(([k, value]) => before[k] !== value));
      assertVariablesSettable(opts.principal, template.spec, { env: setsEnv }, `body/variants/${i}/env`);
      await this.assertLayersExist(v.extraLayers, `variants/${i}/extraLayers`);
    }
    const now = this.clock.now();
    const group = { id, ...normalized, createdAt: existing?.createdAt ?? now, updatedAt: now };
    if (opts.dryRun) {
      const same = (g: Group) =>
        canonicalJson({
          kind: g.kind,
          placement: g.placement,
          caps: g.caps,
          variants: g.variants,
          scaling: g.scaling,
          idleTiers: g.idleTiers,
        });
      return { group, created: !existing, changed: !existing || same(existing) !== same(group) };
    }
    return this.store.groups.put(group);
  }

  /** Deletes a template version; 409 while a variant uses it (the store refuses). */
  async deleteTemplate(name: string, version: string): Promise<void> {
    await this.store.templates.delete(name, version);
  }

  /** Deletes a group and its variants; 409 while instances exist (the store refuses). */
  async deleteGroup(id: string): Promise<void> {
    await this.store.groups.delete(id);
  }
}
