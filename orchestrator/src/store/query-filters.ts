// The optional filters of the repositories' list queries, written once: each
// condition applies only when its value is given, in the order listed (so the
// SQL is what the hand-written `$if` chains produced).

import type { ReferenceExpression, SelectQueryBuilder } from 'kysely';

/** [column, operator, value]; an undefined value leaves the condition out. */
export type OptionalCondition<DB, TB extends keyof DB> = readonly [column: ReferenceExpression<DB, TB>, op: '=' | 'in' | '<', value: unknown];

/**
 * Adds the given conditions to a select (use as `.$call((q) => whereGiven(q, [...]))`).
 * The values are typed by the repository's filter interface, not against the column here.
 */
export function whereGiven<DB, TB extends keyof DB, O>(q: SelectQueryBuilder<DB, TB, O>, conditions: readonly OptionalCondition<DB, TB>[]): SelectQueryBuilder<DB, TB, O> {
  let out = q;
  for (const [column, op, value] of conditions) if (value !== undefined) out = out.where(column, op, value as never);
  return out;
}
