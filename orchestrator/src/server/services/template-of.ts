// The template version an instance was created from, through its group's variant.

import type { Instance, TemplateSpec } from '../../domain/index.js';
import type { Store } from '../../store/store.js';

export async function templateOf(store: Store, instance: Pick<Instance, 'groupId' | 'variantId'>): Promise<TemplateSpec | undefined> {
  const group = await store.groups.get(instance.groupId);
  const variant = group?.variants.find((v) => v.id === instance.variantId);
  return variant ? (await store.templates.get(variant.template.name, variant.template.version))?.spec : undefined;
}
