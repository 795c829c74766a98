// The shapes most ectl subcommands share, written once: ask the API for one
// answer, then print it as JSON with --json or render it for a person; a list
// is the same with a table. Commands keep their own flags, texts and order.

import type { Command } from 'commander';
import { listOf } from './api-client.js';
import { printFields, printJson, printTable } from './output.js';
import type { CommandContext } from './program.js';
import type { Column } from './table.js';

/** Parsed options of a command; --json is always one of them. */
export type JsonOpts = { json?: boolean };

export interface JsonCommandSpec<T, O extends JsonOpts> {
  /** Name and arguments, as for `Command.command` ('get <id>'). */
  use: string;
  description: string;
  /** Options other than --json, in help order (they come before it). */
  options?: (c: Command) => Command;
  /** Help text of --json. */
  json?: string;
  /** The answer (the value --json prints). Asks `ctx.client()` itself, so checks before it keep their order. */
  fetch(opts: O, ...args: string[]): Promise<T>;
  /** The answer for a person. */
  render(value: T, opts: O, ...args: string[]): void;
}

/** Registers `parent <use>`: fetch, then JSON with --json or the human rendering. */
export function jsonCommand<T, O extends JsonOpts = JsonOpts>(parent: Command, ctx: CommandContext, spec: JsonCommandSpec<T, O>): Command {
  const c = parent.command(spec.use).description(spec.description);
  return (spec.options ? spec.options(c) : c).option('--json', spec.json ?? 'print JSON').action(async (...argv: unknown[]) => {
    // commander passes the declared arguments, then the options, then the command
    const args = argv.slice(0, -2) as string[];
    const opts = argv[argv.length - 2] as O;
    const value = await spec.fetch(opts, ...args);
    if (opts.json) return printJson(ctx.out, value);
    spec.render(value, opts, ...args);
  });
}

export interface ListCommandSpec<T, O extends JsonOpts> extends Omit<JsonCommandSpec<T[], O>, 'use' | 'fetch' | 'render'> {
  use?: string;
  /** API path of the list. */
  path: string | ((...args: string[]) => string);
  /** Key of the list in the answer (`{ hosts: [...] }`). */
  key: string;
  query?: (opts: O) => Record<string, string | number | undefined>;
  /** Narrows the rows after the fetch. */
  filter?: (rows: T[], opts: O) => T[];
  columns: readonly Column<T>[];
  /** Said on stderr when there are no rows. */
  empty: string | ((...args: string[]) => string);
}

/** Registers a list subcommand (default `ls`): GET a list, then JSON or a table. */
export function listCommand<T, O extends JsonOpts = JsonOpts>(parent: Command, ctx: CommandContext, spec: ListCommandSpec<T, O>): Command {
  return jsonCommand<T[], O>(parent, ctx, {
    use: spec.use ?? 'ls',
    description: spec.description,
    options: spec.options,
    json: spec.json,
    fetch: async (opts, ...args) => {
      const path = typeof spec.path === 'string' ? spec.path : spec.path(...args);
      const answer = await (await ctx.client()).get(path, spec.query ? { query: spec.query(opts) } : undefined);
      const rows = listOf<T>(answer, spec.key);
      return spec.filter ? spec.filter(rows, opts) : rows;
    },
    render: (rows, _opts, ...args) =>
      printTable(ctx.out, rows, spec.columns, typeof spec.empty === 'string' ? spec.empty : spec.empty(...args)),
  });
}

/** Registers a subcommand that GETs one object and prints it as `key: value` fields. */
export function showCommand<T, O extends JsonOpts = JsonOpts>(
  parent: Command,
  ctx: CommandContext,
  spec: Omit<JsonCommandSpec<T, O>, 'fetch' | 'render'> & { path: (...args: string[]) => string; fields: (value: T) => [string, string][] },
): Command {
  return jsonCommand<T, O>(parent, ctx, {
    ...spec,
    fetch: async (_opts, ...args) => (await ctx.client()).get<T>(spec.path(...args)),
    render: (value) => printFields(ctx.out, spec.fields(value)),
  });
}

/** Registers a subcommand that DELETEs one resource and says so in one line. */
export function deleteCommand(
  parent: Command,
  ctx: CommandContext,
  spec: Omit<JsonCommandSpec<unknown, JsonOpts>, 'fetch' | 'render' | 'json'> & {
    path: (...args: string[]) => string;
    done: (...args: string[]) => string;
  },
): Command {
  return jsonCommand<unknown>(parent, ctx, {
    ...spec,
    json: 'print the answer as JSON',
    fetch: async (_opts, ...args) => (await ctx.client()).request<unknown>('DELETE', spec.path(...args)),
    render: (_res, _opts, ...args) => ctx.out.line(spec.done(...args)),
  });
}
