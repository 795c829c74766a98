// Runs once before the test files: checks the Docker engine is reachable and
// builds the shared test images (skipped when their content tag exists).

import { assertDockerReachable } from './docker.js';
import { ensureImage, testImages } from './images.js';

export default async function setup(): Promise<void> {
  await assertDockerReachable();
  for (const def of Object.values(testImages)) await ensureImage(def);
}
