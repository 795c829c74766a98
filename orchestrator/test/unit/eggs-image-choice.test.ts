import { describe, expect, it } from 'vitest';
import { chosenImage, updateImage } from '../../src/eggs/image-choice.js';
import { isAppError } from '../../src/shared/errors.js';

const spec = {
  image: 'ghcr.io/pterodactyl/yolks:java_21',
  images: { 'Java 21': 'ghcr.io/pterodactyl/yolks:java_21', 'Java 17': 'ghcr.io/pterodactyl/yolks:java_17' },
};
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    if (isAppError(err)) return `${err.code}: ${err.message}`;
    throw err;
  }
  throw new Error('not refused');
};

describe('chosenImage: the image of a choice given at creation', () => {
  const table: [string, string][] = [
    ['Java 17', 'ghcr.io/pterodactyl/yolks:java_17'],
    ['Java 21', 'ghcr.io/pterodactyl/yolks:java_21'],
    ['ghcr.io/pterodactyl/yolks:java_17', 'ghcr.io/pterodactyl/yolks:java_17'],
  ];
  for (const [choice, image] of table) it(choice, () => expect(chosenImage(spec, choice)).toBe(image));
  it('refuses an unknown choice, listing the choices', () => {
    expect(refusal(() => chosenImage(spec, 'Java 8'))).toBe(
      'VALIDATION_FAILED: body/image "Java 8" is not one of this template\'s image choices: Java 21 (ghcr.io/pterodactyl/yolks:java_21), Java 17 (ghcr.io/pterodactyl/yolks:java_17)',
    );
    expect(refusal(() => chosenImage(spec, 'java 17'))).toMatch(/"java 17" is not one of/);
    expect(refusal(() => chosenImage(spec, 'example.invalid/other:1'))).toMatch(/is not one of this template's image choices/);
  });
  it('refuses any choice on a template without images', () => {
    expect(refusal(() => chosenImage({ image: 'itzg/minecraft-server:latest' }, 'Java 17'))).toBe(
      'VALIDATION_FAILED: body/image: this template offers no image choices (it has no images); its instances run itzg/minecraft-server:latest',
    );
  });
});

describe('updateImage: what an update names', () => {
  it('a label is its image; any reference stays itself', () => {
    expect(updateImage(spec, 'Java 17')).toBe('ghcr.io/pterodactyl/yolks:java_17');
    expect(updateImage(spec, 'registry.example.invalid/paper:1.21')).toBe('registry.example.invalid/paper:1.21');
    expect(updateImage(undefined, 'itzg/minecraft-server:java21')).toBe('itzg/minecraft-server:java21');
  });
  it('text with spaces that is no label is refused, with the choices', () => {
    expect(refusal(() => updateImage(spec, 'Java 8'))).toBe(
      'VALIDATION_FAILED: image "Java 8" is neither an image reference (no spaces) nor an image choice of this instance\'s template; the template\'s image choices are Java 21 (ghcr.io/pterodactyl/yolks:java_21), Java 17 (ghcr.io/pterodactyl/yolks:java_17)',
    );
    expect(refusal(() => updateImage({ image: 'x:1' }, 'a b'))).toBe(
      'VALIDATION_FAILED: image "a b" is neither an image reference (no spaces) nor an image choice of this instance\'s template',
    );
  });
});
