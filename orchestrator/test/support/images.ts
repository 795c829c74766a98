// Test images, built locally (no registry can be reached) and tagged by a hash
// of their content, so each is built once per content and reused across runs.
// The build itself is src/shared/local-image.ts (also what `npm start` uses for
// the example network's server image); this module defines the test images:
//
//   busybox — a static busybox (Debian busybox-static) in a FROM scratch image
//   node    — the host's node binary plus the libraries ldd lists, FROM scratch,
//             with busybox for a shell
//
// The Minecraft-protocol test server is defined in test-images/mc-server/image.ts.

import {
  ensureImage as ensureLocalImage,
  imageExists as localImageExists,
  NODE_BINARY,
  sharedLibraries,
  type EnsureImageOptions,
  type ImageDefinition,
} from '../../src/shared/local-image.js';
import { DOCKER_SOCKET } from './docker.js';

export { imageTag, type ImageDefinition, type ImageFile } from '../../src/shared/local-image.js';

export const imageExists = (tag: string): Promise<boolean> => localImageExists(tag, DOCKER_SOCKET);

/** Builds the image unless an image with the same content tag already exists (on the tests' engine). */
export const ensureImage = (def: ImageDefinition, options: Omit<EnsureImageOptions, 'socketPath'> = {}): Promise<string> =>
  ensureLocalImage(def, { ...options, socketPath: DOCKER_SOCKET });

const BUSYBOX = '/bin/busybox';

export const busyboxImage: ImageDefinition = {
  name: 'busybox',
  dockerfile: ['FROM scratch', 'COPY busybox /bin/busybox', 'RUN ["/bin/busybox", "--install", "-s", "/bin"]', 'CMD ["/bin/sh"]'].join(
    '\n',
  ),
  files: () => [{ path: 'busybox', from: BUSYBOX, mode: 0o755 }],
};

export const nodeImage: ImageDefinition = {
  name: 'node',
  dockerfile: [
    'FROM scratch',
    'COPY rootfs/ /',
    'RUN ["/bin/busybox", "--install", "-s", "/bin"]',
    'ENV PATH=/usr/local/bin:/bin',
    'CMD ["/usr/local/bin/node"]',
  ].join('\n'),
  files: () => [
    { path: 'rootfs/usr/local/bin/node', from: NODE_BINARY, mode: 0o755 },
    { path: 'rootfs/bin/busybox', from: BUSYBOX, mode: 0o755 },
    { path: 'rootfs/tmp/.keep', content: '' },
    ...sharedLibraries(NODE_BINARY).map((l) => ({ path: `rootfs${l.path}`, from: l.real, mode: 0o755 })),
  ],
};

export const testImages = { busybox: busyboxImage, node: nodeImage } as const;
