// Pure tests of ectl's table formatter and the age/size helpers it uses.

import { describe, expect, it } from 'vitest';
import { formatAge, formatBytes, formatTable } from '../../src/cli/table.js';

describe('table formatter', () => {
  const rows = [
    { id: 'host-a', status: 'ONLINE', n: 3 },
    { id: 'b', status: 'OFFLINE', n: 120 },
  ];
  const columns = [
    { header: 'id', value: (r: (typeof rows)[number]) => r.id },
    { header: 'instances', value: (r: (typeof rows)[number]) => r.n, align: 'right' as const },
    { header: 'status', value: (r: (typeof rows)[number]) => r.status },
  ];

  it('aligns columns under upper-case headers, right-aligns numbers and leaves no trailing spaces', () => {
    expect(formatTable(rows, columns)).toBe(
      ['ID      INSTANCES  STATUS', 'host-a          3  ONLINE', 'b             120  OFFLINE', ''].join('\n'),
    );
  });

  it('shows "-" for missing values and flattens control characters so one row stays one line', () => {
    const out = formatTable(
      [{ a: null as string | null, b: 'x\ny\u0007' }],
      [
        { header: 'a', value: (r) => r.a },
        { header: 'b', value: (r) => r.b },
      ],
    );
    expect(out).toBe('A  B\n-  x y\n');
  });

  it('prints only the header for no rows', () => {
    expect(formatTable([], columns)).toBe('ID  INSTANCES  STATUS\n');
  });

  it('formats ages and sizes for humans', () => {
    const now = 1_000_000_000;
    expect(formatAge(now - 5_000, now)).toBe('5s ago');
    expect(formatAge(now - 3 * 60_000, now)).toBe('3m ago');
    expect(formatAge(new Date(now - 2 * 3_600_000).toISOString(), now)).toBe('2h ago');
    expect(formatAge(null, now)).toBe('-');
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.5 KiB');
    expect(formatBytes(3 * 1024 ** 3)).toBe('3.0 GiB');
  });
});
