// Egg startup lines, pure. Egg templates (`startup`) give the line to the
// image's own entrypoint as STARTUP with Wings' variables (wingsEnv); the
// entrypoint fills `{{VAR}}` from the environment. Templates with `command`
// (older egg imports): the line turned into a container command (argv), the
// `{{VAR}}` / `${VAR}` references in each argument filled in from the
// instance's variables at create time. Values are never parsed by a shell: a
// simple line becomes argv directly; a line that needs a shell runs through
// `/bin/sh -c` and reads the variables from the environment instead.

import { referenceVariable } from './config-references.js';

/** Placeholders in a template command: `{{NAME}}` (Pterodactyl) and `${NAME}`. */
const REFERENCE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** Names a command refers to, in order of first use. */
export function commandReferences(argv: readonly string[]): string[] {
  const names = new Set<string>();
  for (const arg of argv) for (const m of arg.matchAll(REFERENCE)) names.add((m[1] ?? m[2]) as string);
  return [...names];
}

/** Fills in every reference; an unknown name becomes the empty string (as the shell would). */
export function renderStartup(argv: readonly string[], vars: Readonly<Record<string, string>>): string[] {
  return argv.map((arg) => arg.replace(REFERENCE, (_all, a: string | undefined, b: string | undefined) => vars[(a ?? b) as string] ?? ''));
}

/** Characters that mean the line needs a shell (operators, expansions other than `${NAME}`, globs). */
const SHELL_SYNTAX = /[|&;<>()`*?~\n\\]|\$(?!\{[A-Za-z_][A-Za-z0-9_]*\})/;

/** Splits a line into words with single and double quotes; undefined when it needs a shell. */
export function splitWords(line: string): string[] | undefined {
  const words: string[] = [];
  let word = '';
  let started = false;
  let quote: '"' | "'" | undefined;
  for (const ch of line) {
    if (quote) {
      if (ch === quote) quote = undefined;
      else word += ch;
      continue;
    }
    if (ch === '"' || ch === "'") {
      quote = ch;
      started = true;
    } else if (/\s/.test(ch)) {
      if (started) words.push(word);
      word = '';
      started = false;
    } else {
      word += ch;
      started = true;
    }
  }
  if (quote) return undefined;
  if (started) words.push(word);
  return words;
}

export interface StartupCommand {
  argv: string[];
  /** True when the line runs through `/bin/sh -c` (the image must have one). */
  shell: boolean;
}

/**
 * The container command for an egg's startup line (templates with `command`;
 * egg imports give the line to the image's entrypoint as STARTUP instead, and
 * the preview reads this to tell whether the line needs a shell). Outside
 * quotes, shell syntax (`&&`, `$(…)`, redirections) sends the line through
 * `/bin/sh -c` with every `{{NAME}}` rewritten to an expansion of `${NAME}`,
 * which the shell reads from the container's environment: values are then
 * expanded, never re-parsed as commands.
 */
export function startupCommand(line: string): StartupCommand | undefined {
  const trimmed = line.trim();
  if (trimmed.length === 0) return undefined;
  const unquoted = trimmed.replace(/'[^']*'/g, "''");
  const words = SHELL_SYNTAX.test(unquoted) ? undefined : splitWords(trimmed);
  if (words && words.length > 0) return { argv: words, shell: false };
  return { argv: ['/bin/sh', '-c', referencesViaEnv(trimmed)], shell: true };
}

/**
 * Every `{{NAME}}` and `${NAME}` as a quoted expansion of the environment, minding
 * the quotes around it: `"${NAME}"` outside quotes, `${NAME}` inside double quotes
 * (so `-mod="{{MODS}}"` stays one word), `'"${NAME}"'` inside single quotes.
 * A backslash outside single quotes keeps the next character as it is.
 */
function referencesViaEnv(line: string): string {
  const ref = /^(?:\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\$\{([A-Za-z_][A-Za-z0-9_]*)\})/;
  let out = '';
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] as string;
    const m = ref.exec(line.slice(i));
    if (m) {
      const name = (m[1] ?? m[2]) as string;
      out += quote === '"' ? `\${${name}}` : quote === "'" ? `'"\${${name}}"'` : `"\${${name}}"`;
      i += m[0].length - 1;
    } else if (ch === '\\' && quote !== "'" && i + 1 < line.length) {
      out += ch + (line[i + 1] as string);
      i++;
    } else {
      if (ch === quote) quote = undefined;
      else if (quote === undefined && (ch === '"' || ch === "'")) quote = ch;
      out += ch;
    }
  }
  return out;
}

/** The variables Wings gives every server (an egg's startup and config files use them), unless the instance sets them itself. */
export function builtinEnv(env: Readonly<Record<string, string>>, memoryMb: number, containerPort: number): Record<string, string> {
  return { SERVER_MEMORY: String(memoryMb), SERVER_IP: '0.0.0.0', SERVER_PORT: String(containerPort), ...env };
}

/** The reference the agent fills with the address the game port is published on (it alone knows it). */
export const PUBLISHED_IP_REFERENCE = '{{server.build.default.ip}}';

/** `{{a.b.c}}` references (a dot in the name): the ones the image's entrypoint cannot fill. */
const DOTTED_REFERENCE = /\{\{\s*([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)+)\s*\}\}/g;

/**
 * The startup line as the image's entrypoint expects it: `{{NAME}}` as the egg
 * wrote it, and each dotted reference the entrypoint cannot fill rewritten to
 * the variable it stands for (`{{server.build.default.ip}}` → `{{SERVER_IP}}`,
 * `{{env.MOTD}}` → `{{MOTD}}`). An unknown one is kept (the preview lists it).
 */
export function entrypointStartup(line: string): string {
  return line.replace(DOTTED_REFERENCE, (all, ref: string) => {
    const name = referenceVariable(ref);
    return name === undefined ? all : `{{${name}}}`;
  });
}

/** The dotted references of a startup line nothing here resolves. */
export function unknownStartupReferences(line: string): string[] {
  return [...line.matchAll(DOTTED_REFERENCE)].map((m) => m[1] as string).filter((ref) => referenceVariable(ref) === undefined);
}

/**
 * Wings' environment of a `startup` template's server: the instance's env, then
 * what Wings sets itself and which wins over a variable of the same name
 * (`STARTUP`, `SERVER_MEMORY` in MiB, `SERVER_PORT`, `P_SERVER_LOCATION`,
 * `P_SERVER_UUID`). The agent adds `SERVER_IP` and `TZ`.
 */
export function wingsEnv(
  env: Readonly<Record<string, string>>,
  o: { startup: string; memoryMb: number; containerPort: number; instanceId: string; location: string },
): Record<string, string> {
  return {
    ...env,
    STARTUP: entrypointStartup(o.startup),
    SERVER_MEMORY: String(o.memoryMb),
    SERVER_PORT: String(o.containerPort),
    P_SERVER_LOCATION: o.location,
    P_SERVER_UUID: o.instanceId,
  };
}
