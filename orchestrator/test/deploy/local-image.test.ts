// The local image build (src/shared/local-image.ts), used by the tests' global
// setup and by `npm start`: an image whose content tag exists is not built
// again, and the stable alias is pointed at the content tag.

import { afterAll, describe, expect, it } from 'vitest';
import { ensureImage, imageTag } from '../../src/shared/local-image.js';
import { docker, DOCKER_SOCKET, uniqueId } from '../support/docker.js';
import { busyboxImage } from '../support/images.js';

const alias = `endercloud-test/alias-${uniqueId('img')}:local`;

afterAll(async () => {
  await docker()
    .getImage(alias)
    .remove({ noprune: true })
    .catch(() => undefined);
});

describe('ensureImage', () => {
  it('skips the build when the content tag exists, and tags the alias to it', async () => {
    const builds: string[] = [];
    // The global setup built busybox already: same content, same tag.
    const tag = await ensureImage(busyboxImage, { socketPath: DOCKER_SOCKET, alias, onBuild: (t) => builds.push(t) });
    expect(tag).toBe(imageTag(busyboxImage));
    expect(builds).toEqual([]);
    const [content, aliased] = await Promise.all([docker().getImage(tag).inspect(), docker().getImage(alias).inspect()]);
    expect(aliased.Id).toBe(content.Id);
  });

  it('builds a definition whose content tag is absent, once', async () => {
    const def = { ...busyboxImage, name: `probe-${uniqueId('b')}`, dockerfile: `${busyboxImage.dockerfile}\nLABEL probe=${uniqueId('l')}` };
    const builds: string[] = [];
    try {
      const tag = await ensureImage(def, { socketPath: DOCKER_SOCKET, onBuild: (t) => builds.push(t) });
      expect(builds).toEqual([tag]);
      await ensureImage(def, { socketPath: DOCKER_SOCKET, onBuild: (t) => builds.push(t) });
      expect(builds).toEqual([tag]);
    } finally {
      await docker()
        .getImage(imageTag(def))
        .remove({ force: true })
        .catch(() => undefined);
    }
  });
});
