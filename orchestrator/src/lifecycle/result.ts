// The result shape of the pure lifecycle and placement decisions: a value, or
// the AppError a handler should answer with (the caller decides to throw).

import type { AppError } from '../shared/errors.js';

export type Checked<T> = { ok: true; value: T } | { ok: false; error: AppError };

export function ok<T>(value: T): Checked<T> {
  return { ok: true, value };
}

export function fail<T = never>(error: AppError): Checked<T> {
  return { ok: false, error };
}

/** Returns the value or throws the error: for callers that prefer exceptions. */
export function unwrap<T>(result: Checked<T>): T {
  if (!result.ok) throw result.error;
  return result.value;
}
