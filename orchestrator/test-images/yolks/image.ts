// A stand-in for the Pterodactyl "yolks" images (ghcr.io/pterodactyl/yolks:java_*),
// which cannot be pulled here: the Minecraft-protocol test server's image (node,
// busybox, the server bundle) with a yolks-shaped entrypoint. Like theirs, it
// reads the egg's startup line from STARTUP, turns each `{{VAR}}` into `${VAR}`
// (the values come from the environment), changes to /home/container and runs
// the line with the shell (busybox ash here, bash on the real images; both
// take `[[ … ]]`). Built by content hash after the server image it starts from.

import { imageTag, type ImageDefinition } from '../../src/shared/local-image.js';
import { mcServerImageTag } from '../mc-server/image.js';

/** A second tag of the same image: an egg's second docker_images choice. */
export const YOLKS_JAVA17_ALIAS = 'endercloud-test/yolks-java17:local';

const ENTRYPOINT = `#!/bin/sh
# yolks-shaped entrypoint (test image): see test-images/yolks/image.ts
TZ=\${TZ:-UTC}
export TZ
cd /home/container || exit 1
PARSED=$(printf '%s' "$STARTUP" | sed -e 's/{{ *\\([A-Za-z_][A-Za-z0-9_]*\\) *}}/\${\\1}/g')
printf 'container@endercloud~ %s\\n' "$PARSED"
exec /bin/sh -c "$PARSED"
`;

export const yolksImage: ImageDefinition = {
  name: 'yolks',
  dockerfile: [
    `FROM ${mcServerImageTag()}`,
    'COPY entrypoint.sh /entrypoint.sh',
    'WORKDIR /home/container',
    'STOPSIGNAL SIGINT',
    // Setting ENTRYPOINT clears the base image's CMD: the container runs only this.
    'ENTRYPOINT ["/bin/sh", "/entrypoint.sh"]',
  ].join('\n'),
  files: () => [{ path: 'entrypoint.sh', content: ENTRYPOINT, mode: 0o755 }],
};

export const yolksImageTag = (): string => imageTag(yolksImage);
