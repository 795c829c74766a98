// Contract tests: layers, templates and groups (immutability and idempotent re-puts).

import { describe, expect, it } from 'vitest';
import type { StoreHandle } from './store-contract.js';
import { group, instance, T0, templateSpec, templateVersion } from './fixtures.js';

export function catalogContract(handle: StoreHandle): void {
  describe('template layers', () => {
    it('(id, checksum) is immutable: same pair again is a no-op, a different size is refused', async () => {
      const store = handle.store();
      const layer = { id: 'base', checksum: '1'.repeat(64), sizeBytes: 3 * 1024 ** 3, createdAt: T0 };
      expect(await store.layers.put(layer)).toEqual({ layer, created: true });
      expect(await store.layers.put({ ...layer, createdAt: T0 + 5 })).toEqual({ layer, created: false });
      await expect(store.layers.put({ ...layer, sizeBytes: 1 })).rejects.toMatchObject({ code: 'IMMUTABLE' });
      expect(await store.layers.get('base', layer.checksum)).toEqual(layer);
      expect(await store.layers.get('base', '2'.repeat(64))).toBeUndefined();
    });

    it('one layer id holds several checksums; list filters by id', async () => {
      const store = handle.store();
      await store.layers.put({ id: 'base', checksum: '1'.repeat(64), sizeBytes: 10, createdAt: T0 });
      await store.layers.put({ id: 'base', checksum: '2'.repeat(64), sizeBytes: 20, createdAt: T0 + 1 });
      await store.layers.put({ id: 'other', checksum: '3'.repeat(64), sizeBytes: 30, createdAt: T0 });
      expect((await store.layers.list({ id: 'base' })).map((l) => l.sizeBytes)).toEqual([10, 20]);
      expect(await store.layers.list()).toHaveLength(3);
    });

    it('delete refuses while a template, a variant or an instance references the layer, names them, and lists the unreferenced', async () => {
      const store = handle.store();
      const used = { id: 'base', checksum: 'a'.repeat(64), sizeBytes: 1, createdAt: T0 };
      const spare = { id: 'base', checksum: 'c'.repeat(64), sizeBytes: 2, createdAt: T0 + 1 };
      const extra = { id: 'extra', checksum: 'd'.repeat(64), sizeBytes: 3, createdAt: T0 };
      for (const l of [used, spare, extra]) await store.layers.put(l);
      await store.templates.create(templateVersion('paper', '1', templateSpec({ layers: [{ id: 'base', checksum: used.checksum }] })));
      await store.groups.put(
        group('g-layers', {
          variants: [
            { id: 'v', template: { name: 'paper', version: '1' }, extraLayers: [{ id: 'extra', checksum: extra.checksum }], env: {} },
          ],
        }),
      );
      expect((await store.layers.listUnreferenced()).map((l) => l.checksum)).toEqual([spare.checksum]);
      await expect(store.layers.delete('base')).rejects.toMatchObject({
        code: 'CONFLICT',
        message: expect.stringContaining('template paper@1'),
      });
      await expect(store.layers.delete('extra')).rejects.toMatchObject({
        code: 'CONFLICT',
        message: expect.stringContaining('group g-layers variant v'),
      });
      expect(await store.layers.delete('base', spare.checksum)).toEqual([spare]);
      await expect(store.layers.delete('base', spare.checksum)).rejects.toMatchObject({ code: 'LAYER_NOT_FOUND' });
      await store.groups.delete('g-layers');
      await store.templates.delete('paper', '1');
      await store.instances.create(instance('i-layer'));
      await expect(store.layers.delete('base')).rejects.toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('instance') });
      await store.instances.delete('i-layer');
      expect(await store.layers.delete('base')).toEqual([used]);
      expect(await store.layers.list()).toEqual([extra]);
    });
  });

  describe('templates', () => {
    it('a version is immutable: identical re-put is a no-op, a different body is IMMUTABLE', async () => {
      const store = handle.store();
      const v1 = templateVersion('paper', '1.0.0');
      expect((await store.templates.create(v1)).created).toBe(true);
      expect((await store.templates.create({ ...v1, createdAt: T0 + 99 })).created).toBe(false);
      const changed = templateVersion('paper', '1.0.0', templateSpec({ image: 'other:2' }));
      await expect(store.templates.create(changed)).rejects.toMatchObject({ code: 'IMMUTABLE' });
      expect((await store.templates.get('paper', '1.0.0'))?.spec.image).toBe('endercloud/test-server:1');
      expect((await store.templates.create(templateVersion('paper', '1.1.0', changed.spec))).created).toBe(true);
      expect((await store.templates.list({ name: 'paper' })).map((t) => t.version)).toEqual(['1.0.0', '1.1.0']);
      expect(await store.templates.get('paper', '9')).toBeUndefined();
    });

    it('the spec round-trips through JSON exactly (nested, unicode, union readiness)', async () => {
      const store = handle.store();
      const spec = templateSpec({
        readiness: { kind: 'http', path: '/health?x=1', port: 8080, expectStatus: 204, startupTimeoutMs: 5000 },
      });
      const v = templateVersion('web', '1', spec);
      await store.templates.create(v);
      expect(await store.templates.get('web', '1')).toEqual(v);
    });

    it('delete refuses while a variant uses the version (naming it) and names a missing version', async () => {
      const store = handle.store();
      await store.templates.create(templateVersion('paper', '1'));
      await store.templates.create(templateVersion('paper', '2'));
      await store.groups.put(
        group('g-t', { variants: [{ id: 'main', template: { name: 'paper', version: '1' }, extraLayers: [], env: {} }] }),
      );
      await expect(store.templates.delete('paper', '1')).rejects.toMatchObject({
        code: 'CONFLICT',
        message: expect.stringContaining('group g-t variant main'),
      });
      await store.templates.delete('paper', '2');
      expect((await store.templates.list({ name: 'paper' })).map((t) => t.version)).toEqual(['1']);
      await expect(store.templates.delete('paper', '2')).rejects.toMatchObject({ code: 'TEMPLATE_NOT_FOUND' });
    });
  });

  describe('groups', () => {
    it('put creates, detects unchanged and changed bodies, keeps createdAt', async () => {
      const store = handle.store();
      const g = group('lobby', {
        scaling: {
          minInstances: 1,
          buffer: { count: 2, percent: 20 },
          savegame: { mode: 'archive', retention: '30d', retentionMs: 2_592_000_000 },
        },
        idleTiers: [{ after: '1m', afterMs: 60_000, action: 'pause' }],
      });
      const created = await store.groups.put(g);
      expect(created).toMatchObject({ created: true, changed: true });
      expect(created.group).toEqual(g);
      expect(await store.groups.put({ ...g, updatedAt: T0 + 10 })).toMatchObject({ created: false, changed: false });
      const updated = await store.groups.put({ ...g, placement: 'distributed', createdAt: T0 + 50, updatedAt: T0 + 50 });
      expect(updated).toMatchObject({ created: false, changed: true });
      expect(updated.group).toMatchObject({ placement: 'distributed', createdAt: T0, updatedAt: T0 + 50 });
      expect((await store.groups.list()).map((x) => x.id)).toEqual(['lobby']);
      // Sleep off ([]) is kept apart from "not set" (the system's default).
      expect((await store.groups.put({ ...g, idleTiers: [], updatedAt: T0 + 60 })).group.idleTiers).toEqual([]);
      const { idleTiers: _unset, ...withoutTiers } = g;
      expect((await store.groups.put({ ...withoutTiers, updatedAt: T0 + 70 })).group.idleTiers).toBeUndefined();
    });

    it('delete refuses while instances reference the group and names a missing group', async () => {
      const store = handle.store();
      await store.groups.put(group('g1'));
      await store.instances.create(instance('i-g', { groupId: 'g1' }));
      await expect(store.groups.delete('g1')).rejects.toMatchObject({ code: 'CONFLICT' });
      await store.instances.delete('i-g');
      await store.groups.delete('g1');
      expect(await store.groups.get('g1')).toBeUndefined();
      await expect(store.groups.delete('g1')).rejects.toMatchObject({ code: 'GROUP_NOT_FOUND' });
    });
  });
}
