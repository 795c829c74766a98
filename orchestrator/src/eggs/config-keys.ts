// Which config-file keys a parser can apply, pure and dependency-free (the
// catalog rules use it, and ectl bundles those): references that resolve,
// paths with indexes and wildcards where the parser has paths, value matching
// where the parser can read the value that is there.

import type { ConfigParser } from '../domain/template.js';
import { unknownReferences } from './config-references.js';
import { ifValueProblem, isPatternPath, parsePath } from './config-paths.js';

/** Parsers that can read the value that is there, so value-matching keys work with them. */
export const VALUE_MATCHING_PARSERS: readonly ConfigParser[] = ['yaml', 'json', 'toml', 'properties', 'ini'];
/** Parsers whose keys are paths with `[0]` indexes and `*` wildcards. */
export const PATH_PARSERS: readonly ConfigParser[] = ['yaml', 'json', 'toml'];
export const KNOWN_REFERENCES =
  'server.build.default.port/ip, server.allocations.default.port/ip, server.build.memory(_limit), config.docker.interface, env.NAME, server.build.env.NAME, server.environment.NAME';

/** Why `key: value` cannot be applied by `parser`, or undefined when it can. */
export function configKeyProblem(parser: ConfigParser, key: string, value: string | Readonly<Record<string, string>>): string | undefined {
  if (PATH_PARSERS.includes(parser)) {
    try {
      parsePath(key);
    } catch (err) {
      return (err as Error).message;
    }
  } else if (isPatternPath(key) && (parser === 'ini' || parser === 'xml')) {
    return `wildcard and array paths work with the ${PATH_PARSERS.join(', ')} parsers only (this file is ${parser})`;
  }
  const replacements = typeof value === 'string' ? [value] : Object.values(value);
  if (typeof value !== 'string') {
    if (!VALUE_MATCHING_PARSERS.includes(parser))
      return `value matching (an object of old → new values) works with the ${VALUE_MATCHING_PARSERS.join(', ')} parsers only (this file is ${parser})`;
    for (const ifValue of Object.keys(value)) {
      const problem = ifValueProblem(ifValue);
      if (problem) return problem;
    }
  }
  for (const r of replacements) {
    const unknown = unknownReferences(r);
    if (unknown.length > 0)
      return `refers to ${unknown.map((u) => `{{${u}}}`).join(', ')}, which names nothing an instance has (known: ${KNOWN_REFERENCES})`;
  }
  return undefined;
}
