// Egg fixtures (test/fixtures/eggs/) as the real engine runs them: the server
// images of docker_images are the yolks-shaped image (test-images/yolks), as
// Pterodactyl's eggs name the yolks images; install containers run in the
// Minecraft-protocol test server's image, which has ash.

import { readFileSync } from 'node:fs';
import { mcServerImageTag } from '../../test-images/mc-server/image.js';
import { yolksImageTag } from '../../test-images/yolks/image.js';

export function eggFixtureText(file: string): string {
  return readFileSync(new URL(`../fixtures/eggs/${file}`, import.meta.url), 'utf8')
    .replaceAll('"Test server": "endercloud-test/mc-server:TAG"', `"Test server": "${yolksImageTag()}"`)
    .replaceAll('endercloud-test/yolks:TAG', yolksImageTag())
    .replaceAll('endercloud-test/mc-server:TAG', mcServerImageTag());
}
