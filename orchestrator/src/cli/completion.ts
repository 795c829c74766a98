// Shell completion scripts for bash, zsh and fish, generated from ectl's own
// command tree (pure): sub-commands and options at every level, files for
// the rest (layer directories, apply files).

export interface CommandNode {
  name: string;
  aliases: string[];
  description: string;
  options: { flag: string; description: string }[];
  commands: CommandNode[];
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

const words = (n: CommandNode): string[] => [...n.commands.flatMap((c) => [c.name, ...c.aliases]), ...n.options.map((o) => o.flag), '--help'];
const shQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

function bash(root: CommandNode): string {
  const cases = [...completionTable(root)].map(([path, node]) => `    ${shQuote(path)}) echo ${shQuote(words(node).join(' '))} ;;`);
  return [
    '# ectl completion for bash: source <(ectl completion bash)',
    '_ectl_words() {',
    '  case "$1" in',
    ...cases,
    '    *) return 1 ;;',
    '  esac',
    '}',
    '_ectl() {',
    '  local cur="${COMP_WORDS[COMP_CWORD]}" path="" next w i',
    '  for ((i = 1; i < COMP_CWORD; i++)); do',
    '    w="${COMP_WORDS[i]}"',
    '    [[ "$w" == -* ]] && continue',
    '    next="${path:+$path }$w"',
    '    _ectl_words "$next" >/dev/null && path="$next"',
    '  done',
    '  COMPREPLY=($(compgen -W "$(_ectl_words "$path")" -- "$cur"))',
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
  for (const [path, node] of table) {
    const cond = `-n ${fishQuote(`__ectl_path_is ${shQuote(path)}`)}`;
    for (const c of node.commands) for (const name of [c.name, ...c.aliases]) lines.push(`complete -c ectl ${cond} -f -a ${fishQuote(name)} -d ${fishQuote(c.description)}`);
    for (const o of node.options) lines.push(`complete -c ectl ${cond} -l ${o.flag.replace(/^--/, '')} -d ${fishQuote(o.description)}`);
  }
  return `${lines.join('\n')}\n`;
}

export function completionScript(shell: Shell, root: CommandNode): string {
  return shell === 'bash' ? bash(root) : shell === 'zsh' ? zsh(root) : fish(root);
}
