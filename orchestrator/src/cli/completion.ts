// Shell completion scripts for bash, zsh and fish, generated from ectl's own
// command tree (pure): sub-commands and options at every level, the fixed
// values of an option (`--state`), instance, group and template names (the
// script asks `ectl __complete KIND`, which reads the API with a short bound
// and prints nothing when it cannot), files for the rest (layer
// directories, apply files).

export interface CommandNode {
  name: string;
  aliases: string[];
  description: string;
  /** Positional argument names, in order. */
  args?: string[];
  /** `value`: the option takes a required value; `choices`: its fixed values. */
  options: { flag: string; description: string; value?: boolean; choices?: readonly string[] }[];
  commands: CommandNode[];
}

/** What `ectl __complete KIND` lists: the API path, the answer's list key and the name field. */
export const NAME_SOURCES = {
  instances: { path: '/instances', key: 'instances', field: 'name' },
  groups: { path: '/groups', key: 'groups', field: 'id' },
  templates: { path: '/templates', key: 'templates', field: 'name' },
} as const;
export type NameKind = keyof typeof NAME_SOURCES;

/** Pure: the kind of name a command's FIRST positional argument is (`instances get <name>` → instances). */
export function argumentKind(path: string, arg: string | undefined): NameKind | undefined {
  const top = path.split(' ')[0];
  if (arg === 'instance' || (arg === 'name' && (top === 'instances' || top === 'i'))) return 'instances';
  if (arg === 'group' || (arg === 'id' && top === 'groups')) return 'groups';
  if (arg === 'name' && top === 'templates') return 'templates';
  return undefined;
}

/** Pure: the kind of name an option's value is (`--group G` → groups); `--name` is a new name, not completed. */
export function optionKind(flag: string): NameKind | undefined {
  if (flag === '--group' || flag === '--to-group') return 'groups';
  if (flag === '--instance' || flag === '--to-instance') return 'instances';
  return undefined;
}

/** The words an option's value completes to, as a shell fragment: fixed values, or the names of its kind. */
function valueSource(o: CommandNode['options'][number]): { words: string } | { kind: NameKind } | undefined {
  if (o.choices?.length) return { words: o.choices.join(' ') };
  const kind = optionKind(o.flag);
  return kind ? { kind } : undefined;
}

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
export type Shell = (typeof SHELLS)[number];

/** Every command path ("" = top level) with the words that may follow it. */
export function completionTable(root: CommandNode): Map<string, CommandNode> {
  const table = new Map<string, CommandNode>();
  const walk = (node: CommandNode, path: string): void => {
    table.set(path, node);
    for (const sub of node.commands) for (const name of [sub.name, ...sub.aliases]) walk(sub, path ? `${path} ${name}` : name);
  };
  walk(root, '');
  return table;
}

const words = (n: CommandNode): string[] => [
  ...n.commands.flatMap((c) => [c.name, ...c.aliases]),
  ...n.options.map((o) => o.flag),
  '--help',
];
const shQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

function bash(root: CommandNode): string {
  const table = [...completionTable(root)];
  const cases = table.map(([path, node]) => `    ${shQuote(path)}) echo ${shQuote(words(node).join(' '))} ;;`);
  const names = (kind: NameKind) => `_ectl_names ${kind}`;
  const values: string[] = [];
  for (const [path, node] of table) {
    if (node.commands.length > 0) continue;
    const kind = argumentKind(path, node.args?.[0]);
    if (kind) values.push(`    ${shQuote(`${path}|`)}) ${names(kind)} ;;`);
    for (const o of node.options) {
      const source = valueSource(o);
      if (source)
        values.push(`    ${shQuote(`${path}|${o.flag}`)}) ${'words' in source ? `echo ${shQuote(source.words)}` : names(source.kind)} ;;`);
    }
  }
  const valueFlags = [...new Set(table.flatMap(([, n]) => n.options.filter((o) => o.value).map((o) => o.flag)))].sort();
  return [
    '# ectl completion for bash: source <(ectl completion bash)',
    '_ectl_words() {',
    '  case "$1" in',
    ...cases,
    '    *) return 1 ;;',
    '  esac',
    '}',
    '# Names from the API (bounded by ectl itself; nothing when it cannot answer).',
    '_ectl_names() { command ectl __complete "$1" 2>/dev/null; }',
    '# "PATH|" = the first argument of PATH; "PATH|--flag" = the value of --flag.',
    '_ectl_values() {',
    '  case "$1|$2" in',
    ...values,
    '  esac',
    '}',
    `_ectl_value_flags=${shQuote(` ${valueFlags.join(' ')} `)}`,
    '_ectl() {',
    '  local cur="${COMP_WORDS[COMP_CWORD]}" path="" next w i npos=0 value=""',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    w="${COMP_WORDS[i]}"',
    '    if [[ -n "$value" ]]; then value=""; continue; fi',
    '    if [[ "$w" == -* ]]; then [[ "$_ectl_value_flags" == *" $w "* ]] && value="$w"; continue; fi',
    '    next="${path:+$path }$w"',
    '    if _ectl_words "$next" >/dev/null; then path="$next"; else npos=$((npos + 1)); fi',
    '  done',
    '  if [[ -n "$value" ]]; then',
    '    COMPREPLY=($(compgen -W "$(_ectl_values "$path" "$value")" -- "$cur"))',
    '    return',
    '  fi',
    '  local extra=""',
    '  [[ "$cur" != -* && $npos -eq 0 ]] && extra="$(_ectl_values "$path" "")"',
    '  COMPREPLY=($(compgen -W "$(_ectl_words "$path") $extra" -- "$cur"))',
    '}',
    'complete -o default -F _ectl ectl',
    '',
  ].join('\n');
}

function zsh(root: CommandNode): string {
  return ['# ectl completion for zsh: source <(ectl completion zsh)', 'autoload -U +X bashcompinit && bashcompinit', bash(root)].join('\n');
}

const fishQuote = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

function fish(root: CommandNode): string {
  const table = completionTable(root);
  const lines = [
    '# ectl completion for fish: ectl completion fish | source',
    `set -g __ectl_paths ${[...table.keys()].filter(Boolean).map(fishQuote).join(' ')}`,
    'function __ectl_path_is',
    '  set -l path',
    '  for w in (commandline -opc)[2..-1]',
    "    string match -q -- '-*' $w; and continue",
    '    set -l next (string join " " $path $w)',
    '    contains -- $next $__ectl_paths; and set path $path $w',
    '  end',
    '  test "$(string join " " $path)" = "$argv[1]"',
    'end',
  ];
  const names = (kind: NameKind) => fishQuote(`(ectl __complete ${kind} 2>/dev/null)`);
  for (const [path, node] of table) {
    const cond = `-n ${fishQuote(`__ectl_path_is ${shQuote(path)}`)}`;
    for (const c of node.commands)
      for (const name of [c.name, ...c.aliases])
        lines.push(`complete -c ectl ${cond} -f -a ${fishQuote(name)} -d ${fishQuote(c.description)}`);
    const kind = node.commands.length === 0 ? argumentKind(path, node.args?.[0]) : undefined;
    if (kind) lines.push(`complete -c ectl ${cond} -f -a ${names(kind)}`);
    for (const o of node.options) {
      const source = valueSource(o);
      const value = !source ? '' : ` -x -a ${'words' in source ? fishQuote(source.words) : names(source.kind)}`;
      lines.push(`complete -c ectl ${cond} -l ${o.flag.replace(/^--/, '')}${value} -d ${fishQuote(o.description)}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

export function completionScript(shell: Shell, root: CommandNode): string {
  return shell === 'bash' ? bash(root) : shell === 'zsh' ? zsh(root) : fish(root);
}
