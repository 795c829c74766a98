// Boolean variables of egg templates, pure and dependency-free (the catalog
// rules use it, and ectl bundles those): the egg's own pair of values, and a
// value given in any spelling of a boolean normalised to that pair.

import type { BooleanValues } from '../domain/template.js';

const TRUE = new Set(['1', 'true']);
const FALSE = new Set(['0', 'false']);

/** `true`, `false`, `1`, `0` (JSON or text, any case) → the variable's own spelling; anything else unchanged (then refused by its values). */
export function normalizeBoolean(values: BooleanValues, value: unknown): unknown {
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return value;
  const text = String(value).trim().toLowerCase();
  if (TRUE.has(text)) return values.true;
  if (FALSE.has(text)) return values.false;
  return value;
}
