// Runs once before the test files: checks the Docker engine is reachable and
// builds the shared test images, including the Minecraft-protocol test server
// and the yolks-shaped image on top of it
// (each skipped when its content tag exists). The server is also tagged as the
// example network's stable tag, as `npm start` does (examples/network.yml).

import { assertDockerReachable } from './docker.js';
import { ensureImage, testImages } from './images.js';
import { MC_SERVER_LOCAL_TAG, mcServerImage } from '../../test-images/mc-server/image.js';
import { YOLKS_JAVA17_ALIAS, yolksImage } from '../../test-images/yolks/image.js';

export default async function setup(): Promise<void> {
  await assertDockerReachable();
  for (const def of Object.values(testImages)) await ensureImage(def);
  await ensureImage(mcServerImage, { alias: MC_SERVER_LOCAL_TAG });
  // FROM the server image above: built after it.
  await ensureImage(yolksImage, { alias: YOLKS_JAVA17_ALIAS });
}
