// A tiny fixed-width table formatter for ectl's human output (pure).

export interface Column<T> {
  header: string;
  value: (row: T) => string | number | null | undefined;
  /** Right-align (numbers). */
  align?: 'left' | 'right';
}

/** The properties of T a table cell can show as they are. */
type PrintableKey<T> = { [K in keyof T]-?: T[K] extends string | number | null | undefined ? K : never }[keyof T] & string;

/** Columns that show a row's property under its own name (`id` → ID), in the order given. */
export function keyColumns<T>(...keys: PrintableKey<T>[]): Column<T>[] {
  return keys.map((key) => ({ header: key, value: (row: T) => row[key] as string | number | null | undefined }));
}

function cell(v: string | number | null | undefined): string {
  if (v === null || v === undefined || v === '') return '-';
  // One row per line: control characters from the API never break the layout.
  const flat = String(v).replace(/[\r\n\t]+/g, ' ');
  // eslint-disable-next-line no-control-regex -- stripping control characters is the point
  return flat.replace(/[\u0000-\u001f\u007f]/g, '');
}

/** Formats rows under upper-case headers, two spaces between columns, no trailing spaces. */
export function formatTable<T>(rows: readonly T[], columns: readonly Column<T>[]): string {
  const cells = rows.map((row) => columns.map((c) => cell(c.value(row))));
  const headers = columns.map((c) => c.header.toUpperCase());
  const widths = columns.map((_, i) => Math.max(headers[i]!.length, ...cells.map((r) => r[i]!.length)));
  const render = (values: string[]): string =>
    values
      .map((v, i) => (columns[i]!.align === 'right' ? v.padStart(widths[i]!) : i === values.length - 1 ? v : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [render(headers), ...cells.map(render)].join('\n') + '\n';
}

/** "3s ago", "5m ago", "2h ago", "4d ago" relative to `now`. */
export function formatAge(thenMs: number | string | null | undefined, nowMs: number): string {
  if (thenMs === null || thenMs === undefined) return '-';
  const then = typeof thenMs === 'number' ? thenMs : Date.parse(thenMs);
  if (!Number.isFinite(then)) return '-';
  const s = Math.max(0, Math.round((nowMs - then) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ago`;
  return `${Math.floor(s / 86_400)}d ago`;
}

/** 1536 → "1.5 KiB". */
export function formatBytes(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(1)} ${units[i]}`;
}
