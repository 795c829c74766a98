// Field readers for the scaling parser: each one checks one value and throws a
// VALIDATION_FAILED AppError naming the field path (`scaling.buffer.percent: …`),
// so a refused policy says exactly which field to fix and how.

import { parseDuration } from '../shared/config.js';
import { AppError } from '../shared/errors.js';

export type Fields = Record<string, unknown>;

export function invalid(path: string, problem: string): AppError {
  return new AppError('VALIDATION_FAILED', `${path}: ${problem}`, { details: { field: path } });
}

export function objectAt(value: unknown, path: string): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(path, 'must be an object');
  return value as Fields;
}

/** Refuses keys outside `known`; a replaced key gets its own message naming the new field. */
export function onlyKnownKeys(
  fields: Fields,
  path: string,
  known: readonly string[],
  replaced: Readonly<Record<string, string>> = {},
): void {
  for (const key of Object.keys(fields)) {
    if (known.includes(key)) continue;
    const replacement = replaced[key];
    if (replacement !== undefined) throw invalid(`${path}.${key}`, `was replaced: ${replacement}`);
    throw invalid(`${path}.${key}`, `is not a known field (known: ${known.join(', ')})`);
  }
}

export function intAt(value: unknown, path: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw invalid(path, `must be an integer (got ${JSON.stringify(value)})`);
  if (value < min || value > max) throw invalid(path, `must be between ${min} and ${max} (got ${value})`);
  return value;
}

export function oneOf<T extends string>(value: unknown, path: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !allowed.includes(value as T)) {
    throw invalid(path, `must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
  }
  return value as T;
}

/** Longest accepted duration: 10 years; longer is a typo, not a policy. */
export const MAX_DURATION_MS = 3650 * 86_400_000;

export interface ParsedDuration {
  text: string;
  ms: number;
}

/**
 * Reads the duration `fields[key]` ("10m", "6h", "7d"). The stored form keeps
 * the operator's text and `<key>Ms`; an input `<key>Ms` is accepted only
 * beside the text and equal to it, so a policy read back from the API can be
 * sent again unchanged, while a bare `<key>Ms` is refused.
 */
export function durationAt(fields: Fields, key: string, path: string, minMs: number): ParsedDuration | undefined {
  const text = fields[key];
  const msKey = `${key}Ms`;
  const ms = fields[msKey];
  if (text === undefined) {
    if (ms !== undefined)
      throw invalid(`${path}.${msKey}`, `give ${key} as a duration string such as "10m" (${msKey} is only the stored echo of it)`);
    return undefined;
  }
  if (typeof text !== 'string')
    throw invalid(`${path}.${key}`, `must be a duration string such as "10m", "6h" or "7d" (got ${JSON.stringify(text)})`);
  let parsed: number;
  try {
    parsed = parseDuration(text);
  } catch (err) {
    throw invalid(`${path}.${key}`, (err as Error).message);
  }
  if (parsed < minMs) throw invalid(`${path}.${key}`, minMs === 1 ? 'must be longer than 0' : `must be at least ${minMs} ms`);
  if (parsed > MAX_DURATION_MS) throw invalid(`${path}.${key}`, 'must be at most 3650d');
  if (ms !== undefined && ms !== parsed)
    throw invalid(`${path}.${msKey}`, `is ${JSON.stringify(ms)} but ${key} "${text}" is ${parsed} ms (leave ${msKey} out)`);
  return { text: text.trim(), ms: parsed };
}
