// Identifier rules shared by every component. Instance ids become directory
// and container names, so they never contain path separators.

import { AppError } from './errors.js';

export const AGENT_ID_PATTERN = /^[a-z0-9][a-z0-9-]*$/;
/** Instance, layer, template, group and variant ids: one rule. */
export const RESOURCE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/;
export const SHA256_PATTERN = /^[0-9a-f]{64}$/;

const MAX_ID_LENGTH = 128;

export function isValidId(value: unknown, pattern: RegExp = RESOURCE_ID_PATTERN): value is string {
  return typeof value === 'string' && value.length <= MAX_ID_LENGTH && pattern.test(value) && value !== '.' && value !== '..';
}

export function assertId(kind: string, value: unknown, pattern: RegExp = RESOURCE_ID_PATTERN): string {
  if (!isValidId(value, pattern)) {
    throw new AppError(
      'INVALID_ID',
      `${kind} ${JSON.stringify(value)} is invalid: use letters, digits, '_', '.', '-' (starting with a letter or digit, at most ${MAX_ID_LENGTH} characters)`,
    );
  }
  return value;
}

export function assertChecksum(value: unknown): string {
  if (typeof value !== 'string' || !SHA256_PATTERN.test(value)) {
    throw new AppError('VALIDATION_FAILED', `checksum ${JSON.stringify(value)} is not a lowercase hex SHA-256`);
  }
  return value;
}
