// Cron expressions, pure: five fields (minute hour day-of-month month
// day-of-week) with `*`, lists, ranges and steps, evaluated in UTC. The backup
// scheduler asks for the next run after a time; nothing here reads a clock.

import { AppError } from '../shared/errors.js';

export interface CronSchedule {
  readonly source: string;
  readonly minutes: ReadonlySet<number>;
  readonly hours: ReadonlySet<number>;
  readonly days: ReadonlySet<number>;
  readonly months: ReadonlySet<number>;
  readonly weekdays: ReadonlySet<number>;
  /** Day-of-month and day-of-week both restricted: classic cron runs when either matches. */
  readonly dayEither: boolean;
}

const FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day-of-week', min: 0, max: 7 },
] as const;

function invalid(expr: string, why: string): AppError {
  return new AppError('VALIDATION_FAILED', `cron expression ${JSON.stringify(expr)}: ${why}`, { details: { field: 'schedule' } });
}

function parseField(expr: string, text: string, f: (typeof FIELDS)[number]): Set<number> {
  const out = new Set<number>();
  for (const part of text.split(',')) {
    const m = /^(\*|(\d+)(?:-(\d+))?)(?:\/(\d+))?$/.exec(part);
    if (!m) throw invalid(expr, `${f.name} field ${JSON.stringify(part)} is not *, a number, a range or a step`);
    const step = m[4] === undefined ? 1 : Number(m[4]);
    let lo: number = f.min;
    let hi: number = f.max;
    if (m[1] !== '*') {
      lo = Number(m[2]);
      hi = m[3] === undefined ? (m[4] === undefined ? lo : f.max) : Number(m[3]);
    }
    if (step < 1) throw invalid(expr, `${f.name} step must be at least 1`);
    if (lo < f.min || hi > f.max || lo > hi) throw invalid(expr, `${f.name} ${part} is outside ${f.min}-${f.max}`);
    for (let v = lo; v <= hi; v += step) out.add(f.name === 'day-of-week' && v === 7 ? 0 : v);
  }
  return out;
}

/** Parses `"0 4 * * *"`; VALIDATION_FAILED naming the bad field otherwise. */
export function parseCron(expr: string): CronSchedule {
  const parts = expr.trim().split(/\s+/);
  if (parts.length !== 5) throw invalid(expr, `needs 5 fields (minute hour day-of-month month day-of-week), got ${parts.length}`);
  const [minutes, hours, days, months, weekdays] = FIELDS.map((f, i) => parseField(expr, parts[i] as string, f)) as [
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
    Set<number>,
  ];
  return { source: expr, minutes, hours, days, months, weekdays, dayEither: parts[2] !== '*' && parts[4] !== '*' };
}

function dayMatches(s: CronSchedule, d: Date): boolean {
  const dom = s.days.has(d.getUTCDate());
  const dow = s.weekdays.has(d.getUTCDay());
  return s.dayEither ? dom || dow : dom && dow;
}

/** The first minute strictly after `afterMs` (epoch ms, UTC) the schedule fires; undefined when none within 5 years (e.g. 31 February). */
export function nextRun(s: CronSchedule, afterMs: number): number | undefined {
  const d = new Date(Math.floor(afterMs / 60_000) * 60_000 + 60_000);
  const limit = afterMs + 5 * 366 * 86_400_000;
  while (d.getTime() <= limit) {
    if (!s.months.has(d.getUTCMonth() + 1)) {
      d.setUTCMonth(d.getUTCMonth() + 1, 1);
      d.setUTCHours(0, 0, 0, 0);
    } else if (!dayMatches(s, d)) {
      d.setUTCDate(d.getUTCDate() + 1);
      d.setUTCHours(0, 0, 0, 0);
    } else if (!s.hours.has(d.getUTCHours())) {
      d.setUTCHours(d.getUTCHours() + 1, 0, 0, 0);
    } else if (!s.minutes.has(d.getUTCMinutes())) {
      d.setUTCMinutes(d.getUTCMinutes() + 1, 0, 0);
    } else return d.getTime();
  }
  return undefined;
}
