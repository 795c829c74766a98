// The template's file denylist (the egg's `file_denylist`), pure: which paths
// of an instance's data directory the files API and SFTP refuse to read or
// write. Patterns in the gitignore manner Wings uses: `*` within one path
// segment, `**` across segments, `?` one character; a pattern without a `/`
// matches a name at any depth, one with a `/` is anchored at the root; a
// pattern that names a directory covers everything below it; `!pattern`
// allows again what an earlier pattern denied (the last match wins).

import { AppError } from '../shared/errors.js';

interface Rule {
  pattern: string;
  allow: boolean;
  regex: RegExp;
}

function segmentRegex(glob: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const ch = glob[i]!;
    if (ch === '*') {
      if (glob[i + 1] === '*') {
        // `**/` any number of leading directories; a trailing or lone `**` anything.
        if (glob[i + 2] === '/') {
          out += '(?:.*/)?';
          i += 2;
        } else {
          out += '.*';
          i += 1;
        }
      } else out += '[^/]*';
    } else if (ch === '?') out += '[^/]';
    else out += ch.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return out;
}

/** Checks the template's patterns; VALIDATION_FAILED names the entry. */
export function compileDenylist(patterns: readonly string[], field = 'fileDenylist'): Rule[] {
  return patterns.map((raw, i) => {
    const trimmed = raw.trim();
    const allow = trimmed.startsWith('!');
    let body = allow ? trimmed.slice(1) : trimmed;
    if (body === '' || [...body].some((ch) => ch.charCodeAt(0) < 0x20 || ch === '\u007f')) {
      throw new AppError('VALIDATION_FAILED', `${field}/${i}: a denylist entry is a non-empty path pattern without control characters`, {
        details: { field: `${field}/${i}` },
      });
    }
    const anchored = body.startsWith('/') || body.slice(0, -1).includes('/');
    body = body.replace(/^\/+/, '').replace(/\/+$/, '');
    const prefix = anchored ? '^' : '^(?:.*/)?';
    // The path itself, or anything below it (a denied directory covers its contents).
    return { pattern: trimmed, allow, regex: new RegExp(`${prefix}${segmentRegex(body)}(?:/.*)?$`) };
  });
}

/** The pattern denying `path` (`/`-rooted, normalised), or undefined when it is allowed. */
export function deniedBy(rules: readonly Rule[], path: string): string | undefined {
  const rel = path.replace(/^\/+/, '');
  if (rel === '') return undefined; // the root itself is always listable
  let denied: string | undefined;
  for (const rule of rules) if (rule.regex.test(rel)) denied = rule.allow ? undefined : rule.pattern;
  return denied;
}

/** FILE_DENIED naming the path and the pattern when the denylist covers `path`. */
export function assertAllowed(rules: readonly Rule[], path: string): void {
  const pattern = deniedBy(rules, path);
  if (pattern !== undefined) {
    throw new AppError('FILE_DENIED', `${path} is denied by the template's file denylist (${pattern}): it cannot be read or written`, {
      details: { path, pattern },
    });
  }
}
