// The image choices of an egg template (`images`, label → image), pure: what an
// instance runs for a choice given at creation, and what an update's `image`
// names (a choice's label, or any image reference as before).

import type { TemplateSpec } from '../domain/template.js';
import { AppError } from '../shared/errors.js';

type Choices = Pick<TemplateSpec, 'image' | 'images'>;

function listed(images: Readonly<Record<string, string>>): string {
  return Object.entries(images)
    .map(([label, image]) => `${label} (${image})`)
    .join(', ');
}

/** The choice named by its label or by its image, if any. */
function lookup(spec: Choices, choice: string): string | undefined {
  const images = spec.images ?? {};
  return images[choice] ?? Object.values(images).find((image) => image === choice);
}

/** The image of a choice given at creation (`field` names it in the refusal): a label of `images` or one of their images; anything else is refused with the choices. */
export function chosenImage(spec: Choices, choice: string, field = 'body/image'): string {
  const images = spec.images ?? {};
  if (Object.keys(images).length === 0) {
    throw new AppError(
      'VALIDATION_FAILED',
      `${field}: this template offers no image choices (it has no images); its instances run ${spec.image}`,
      { details: { field } },
    );
  }
  const image = lookup(spec, choice);
  if (image === undefined) {
    throw new AppError(
      'VALIDATION_FAILED',
      `${field} ${JSON.stringify(choice)} is not one of this template's image choices: ${listed(images)}`,
      { details: { field, choices: Object.keys(images) } },
    );
  }
  return image;
}

/** The image reference an update names: a choice's label becomes its image; any other reference is taken as it is; text that is neither is refused. */
export function updateImage(spec: Choices | undefined, value: string, field = 'image'): string {
  const image = spec ? lookup(spec, value) : undefined;
  if (image !== undefined) return image;
  if (/^[^\s]+$/.test(value)) return value;
  const images = spec?.images ?? {};
  const choices = Object.keys(images).length > 0 ? `; the template's image choices are ${listed(images)}` : '';
  throw new AppError(
    'VALIDATION_FAILED',
    `${field} ${JSON.stringify(value)} is neither an image reference (no spaces) nor an image choice of this instance's template${choices}`,
    { details: { field } },
  );
}
