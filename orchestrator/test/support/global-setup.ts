// Runs once before the test files: checks the Docker engine is reachable and
// builds the shared test images, including the Minecraft-protocol test server
// (each skipped when its content tag exists). The server is also tagged as the
// example network's stable tag, as `npm start` does (examples/network.yml).

import { assertDockerReachable } from './docker.js';
import { ensureImage, testImages } from './images.js';
import { MC_SERVER_LOCAL_TAG, mcServerImage } from '../../test-images/mc-server/image.js';

export default async function setup(): Promise<void> {
  await assertDockerReachable();
  for (const def of Object.values(testImages)) await ensureImage(def);
  await ensureImage(mcServerImage, { alias: MC_SERVER_LOCAL_TAG });
}
