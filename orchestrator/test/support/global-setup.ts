// Runs once before the test files: checks the Docker engine is reachable and
// builds the shared test images, including the Minecraft-protocol test server
// (each skipped when its content tag exists).

import { assertDockerReachable } from './docker.js';
import { ensureImage, testImages } from './images.js';
import { mcServerImage } from './mc-server.js';

export default async function setup(): Promise<void> {
  await assertDockerReachable();
  for (const def of Object.values(testImages)) await ensureImage(def);
  await ensureImage(mcServerImage);
}
