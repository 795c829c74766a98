// The image of the Minecraft-protocol test server: node + its libraries +
// busybox + the bundled server (build.ts), FROM scratch. Built by content hash
// (src/shared/local-image.ts) by the tests' global setup and by `npm start`,
// which also tags it MC_SERVER_LOCAL_TAG for examples/network.yml.

import { NODE_BINARY, imageTag, sharedLibraries, type ImageDefinition } from '../../src/shared/local-image.js';
import { buildMcServerBundle } from './build.js';

export const MC_SERVER_PORT = 25565;
export const MC_RCON_PORT = 25575;
/** The stable tag the example network's templates use (examples/network.yml). */
export const MC_SERVER_LOCAL_TAG = 'endercloud/mc-server:local';

let bundle: Buffer | undefined;

export const mcServerImage: ImageDefinition = {
  name: 'mc-server',
  dockerfile: [
    'FROM scratch',
    'COPY rootfs/ /',
    'RUN ["/bin/busybox", "sh", "-c", "/bin/busybox --install -s /bin && mkdir -p -m 1777 /data /tmp"]',
    'ENV PATH=/usr/local/bin:/bin',
    'WORKDIR /data',
    `EXPOSE ${MC_SERVER_PORT}/tcp ${MC_RCON_PORT}/tcp`,
    'STOPSIGNAL SIGTERM',
    'CMD ["/usr/local/bin/node", "--no-deprecation", "/opt/mc-server/server.cjs"]',
  ].join('\n'),
  files: () => [
    { path: 'rootfs/usr/local/bin/node', from: NODE_BINARY, mode: 0o755 },
    { path: 'rootfs/bin/busybox', from: '/bin/busybox', mode: 0o755 },
    { path: 'rootfs/opt/mc-server/server.cjs', content: (bundle ??= buildMcServerBundle()), mode: 0o644 },
    ...sharedLibraries(NODE_BINARY).map((l) => ({ path: `rootfs${l.path}`, from: l.real, mode: 0o755 })),
  ],
};

export const mcServerImageTag = (): string => imageTag(mcServerImage);
