// How an API error is shown: the API's stable code and message, with endpoint
// hints rewritten into the ectl command that calls them and the scope that
// command needs, so a refusal never sends a user to a raw endpoint their token
// may not call (pure).

import type { ApiError } from './errors.js';

interface Hint {
  pattern: RegExp;
  replace: string;
}

const HINTS: readonly Hint[] = [
  {
    pattern: /\(POST \/instances\/(?::id|[^/\s]+)\/reset-crash-loop\)/,
    replace: '(ectl instances reset-crash-loop NAME; it needs an admin or manager token)',
  },
  {
    pattern: /PATCH \/instances\/:id\/settings/,
    replace: 'ectl instances settings set NAME KEY=VALUE (an instances:write token)',
  },
];

/** Rewrites endpoint references in an API message (pure). */
export function rewriteHints(message: string): string {
  return HINTS.reduce((m, h) => m.replace(h.pattern, h.replace), message);
}

export function apiErrorLine(err: ApiError): string {
  return `error: ${err.code}: ${rewriteHints(err.apiMessage) || '(no message)'} (HTTP ${err.status})`;
}
