// Egg startup lines, pure: turned into a container command (argv) once at
// import, and the `{{VAR}}` / `${VAR}` references in each argument filled in
// from the instance's variables at create time. Values are never parsed by a
// shell: a simple line becomes argv directly; a line that needs a shell runs
// through `/bin/sh -c` and reads the variables from the environment instead.

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
 * The container command for an egg's startup line. Outside quotes, shell syntax
 * (`&&`, `$(…)`, redirections) sends the line through `/bin/sh -c` with every
 * `{{NAME}}` rewritten to `${NAME}`, which the shell reads from the container's
 * environment: values are then expanded, never re-parsed as commands.
 */
export function startupCommand(line: string): StartupCommand | undefined {
  const trimmed = line.trim();
  if (trimmed.length === 0) return undefined;
  const unquoted = trimmed.replace(/'[^']*'/g, "''");
  const words = SHELL_SYNTAX.test(unquoted) ? undefined : splitWords(trimmed);
  if (words && words.length > 0) return { argv: words, shell: false };
  const viaEnv = trimmed.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (_m, n: string) => `"$${n}"`).replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (_m, n: string) => `"$${n}"`);
  return { argv: ['/bin/sh', '-c', viaEnv], shell: true };
}

/** The variables Wings gives every server (an egg's startup and config files use them), unless the instance sets them itself. */
export function builtinEnv(env: Readonly<Record<string, string>>, memoryMb: number, containerPort: number): Record<string, string> {
  return { SERVER_MEMORY: String(memoryMb), SERVER_IP: '0.0.0.0', SERVER_PORT: String(containerPort), ...env };
}
