// pino logger factory. Secrets never reach logs: known secret-bearing fields
// are redacted at the logger, and callers never log env maps or tokens.

import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

export const REDACT_PATHS = [
  'req.headers.authorization',
  'headers.authorization',
  'authorization',
  'token',
  'env',
  '*.env',
  'secrets',
  '*.secrets',
  'password',
  '*.password',
];

export function createLogger(name: string, level: string, options: LoggerOptions = {}): Logger {
  return pino({ name, level, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, ...options });
}
