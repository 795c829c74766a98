// The check every agent path given by a caller passes before it touches the
// disk: a data import's `?path=`, a files-API path and an egg's config-file
// path. Its own module so that the runtime (egg-runtime.ts) and the importer
// (data-import.ts) share it without importing each other.

import { AppError } from '../shared/errors.js';
import { normalizeLayerPath } from '../shared/layer-checksum.js';

/** Validates a caller's path: relative, normalized, never escaping; '' (or '.') is the instance root. */
export function checkImportPath(raw: string | undefined): string {
  if (raw === undefined || raw === '' || raw === '.' || raw === './') return '';
  const checked = normalizeLayerPath(raw);
  if ('reason' in checked) throw new AppError('UNSAFE_PATH', `path ${JSON.stringify(raw)} ${checked.reason}`);
  return checked.path;
}
