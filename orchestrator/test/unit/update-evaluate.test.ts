// evaluateUpdate, the one rule of an image update's plan (the answer of
// GET /instances/:id/update-plan): its checks, changes and warnings per case,
// and every plan it returns is the public contract's UpdatePlanAnswer.

import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import { UpdatePlanAnswer } from '../../src/contracts/public-api/answers.js';
import type { ImageInfo } from '../../src/server/drivers/host-driver.js';
import { evaluateUpdate } from '../../src/server/services/update-service.js';
import type { ContainerConfig, ContainerUserSpec, TemplateSpec } from '../../src/domain/index.js';

const image = (over: Partial<ImageInfo> = {}): ImageInfo => ({
  ref: 'mc:1',
  id: 'sha256:aaaaaaaaaaaaaaaa',
  repoDigests: [],
  created: '2026-01-01T00:00:00Z',
  sizeBytes: 100,
  user: '',
  pulled: true,
  ...over,
});
const containerConfig: ContainerConfig = {
  image: 'mc:1',
  labels: {},
  env: {},
  resources: { memoryMb: 1024 },
  containerPort: 25565,
  layers: [],
};
const template = { readiness: { kind: 'minecraft_status' } } as unknown as TemplateSpec;

function plan(over: {
  user?: ContainerUserSpec;
  current?: Partial<ImageInfo>;
  candidate?: Partial<ImageInfo>;
  diskFreeBytes?: number | null;
  template?: TemplateSpec | undefined;
}) {
  return evaluateUpdate({
    instance: { id: 'i-1', name: 'lobby', state: 'online', user: over.user ?? { mode: 'endercloud' }, containerConfig },
    template: 'template' in over ? over.template : template,
    current: image(over.current),
    candidate: image({ ref: 'mc:2', id: 'sha256:bbbbbbbbbbbbbbbb', ...over.candidate }),
    diskFreeBytes: over.diskFreeBytes === undefined ? 1_000 : over.diskFreeBytes,
  });
}

describe('evaluateUpdate', () => {
  it.each([
    ['a newer pulled image on a fixed user', {}, true, []],
    ['the image user changes (image mode)', { user: { mode: 'image' }, candidate: { user: 'minecraft' } }, false, ['container user']],
    ['the image user unknown (image mode)', { user: { mode: 'image' }, candidate: { user: null } }, true, []],
    ['the template is missing', { template: undefined }, false, ['template and readiness']],
    ['not enough disk for an unpulled image', { candidate: { pulled: false, sizeBytes: 5_000 } }, false, ['disk space']],
    ['no disk figure from the host', { diskFreeBytes: null }, true, []],
  ] as const)('%s', (_name, over, compatible, failing) => {
    const p = plan(over as Parameters<typeof plan>[0]);
    expect(p.compatible).toBe(compatible);
    expect(p.checks.filter((c) => !c.ok).map((c) => c.name)).toEqual(failing);
    expect(p.automaticUpdates).toBe('off');
    expect([...Value.Errors(UpdatePlanAnswer, p)].map((e) => `${e.path}: ${e.message}`)).toEqual([]);
  });

  it('warns about a downgrade and a skipped disk check, and names the change', () => {
    const p = plan({ candidate: { created: '2025-01-01T00:00:00Z' }, diskFreeBytes: null });
    expect(p.changes).toEqual(['image mc:1 → mc:2', 'content aaaaaaaaaaaa → bbbbbbbbbbbb']);
    expect(p.warnings.join('\n')).toMatch(/older .* downgrade/);
    expect(p.warnings.join('\n')).toContain('disk check was skipped');
  });

  it('the same content id changes nothing in the image and needs no disk', () => {
    const p = plan({ candidate: { id: 'sha256:aaaaaaaaaaaaaaaa', pulled: false, sizeBytes: 10_000 }, diskFreeBytes: 1 });
    expect(p.sameImage).toBe(true);
    expect(p.compatible).toBe(true);
  });
});
