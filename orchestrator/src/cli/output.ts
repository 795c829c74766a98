// Where ectl writes: results to stdout, progress and errors to stderr. Commands
// only see this interface, so tests capture everything with `bufferOutput`.

import { formatTable, type Column } from './table.js';

export interface Output {
  /** Writes a result line (stdout). */
  line(text: string): void;
  /** Writes raw text to stdout (no newline added). */
  write(text: string): void;
  /** Writes a diagnostic line (stderr). */
  error(text: string): void;
  /** Raw stderr writes for spinners and progress bars. */
  status(text: string): void;
  /** Whether stderr is an interactive terminal (animations only then). */
  readonly interactive: boolean;
}

export function printJson(out: Output, value: unknown): void {
  out.line(JSON.stringify(value, null, 2));
}

export function printTable<T>(out: Output, rows: readonly T[], columns: readonly Column<T>[], empty = 'nothing to show'): void {
  if (rows.length === 0) {
    out.error(empty);
    return;
  }
  out.write(formatTable(rows, columns));
}

/** Prints `key: value` lines, keys aligned. */
export function printFields(out: Output, fields: readonly [string, string][]): void {
  const width = Math.max(0, ...fields.map(([k]) => k.length));
  for (const [k, v] of fields) out.line(`${`${k}:`.padEnd(width + 1)} ${v}`);
}

export function processOutput(): Output {
  return {
    line: (text) => void process.stdout.write(`${text}\n`),
    write: (text) => void process.stdout.write(text),
    error: (text) => void process.stderr.write(`${text}\n`),
    status: (text) => void process.stderr.write(text),
    interactive: process.stderr.isTTY === true,
  };
}

export interface BufferedOutput extends Output {
  stdout: string;
  stderr: string;
}

/** An in-memory Output for tests. */
export function bufferOutput(): BufferedOutput {
  const o: BufferedOutput = {
    stdout: '',
    stderr: '',
    line: (text) => void (o.stdout += `${text}\n`),
    write: (text) => void (o.stdout += text),
    error: (text) => void (o.stderr += `${text}\n`),
    status: (text) => void (o.stderr += text),
    interactive: false,
  };
  return o;
}
