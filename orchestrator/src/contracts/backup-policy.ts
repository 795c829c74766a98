// The backup policy of a group (`backup:` in the group body) or of one
// instance (`PUT /instances/:id/backup-policy`): a cron schedule (UTC) and a
// retention rule. The TypeBox schema checks the shape; parseBackupPolicy adds
// the rules a schema cannot say (a valid cron expression) and names the field.

import { Type, type Static } from '@sinclair/typebox';
import { parseCron } from '../lifecycle/cron.js';
import { AppError } from '../shared/errors.js';
import type { BackupPolicy as DomainBackupPolicy } from '../domain/backup-policy.js';

const Count = Type.Integer({ minimum: 0, maximum: 10_000 });

export const RetentionSchema = Type.Object(
  { last: Type.Optional(Count), daily: Type.Optional(Count), weekly: Type.Optional(Count) },
  { additionalProperties: false },
);

export const BackupPolicySchema = Type.Object(
  {
    /** Five-field cron expression, evaluated in UTC; absent = no scheduled backups (retention still prunes). */
    schedule: Type.Optional(Type.String({ minLength: 9, maxLength: 200 })),
    retention: Type.Optional(RetentionSchema),
  },
  { additionalProperties: false },
);
export type BackupPolicy = Static<typeof BackupPolicySchema>;

// The schema's type is exactly the domain's (domain/backup-policy.ts), or this fails to compile.
type SameAs<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const schemaIsTheDomainShape: SameAs<BackupPolicy, DomainBackupPolicy> = true;
void schemaIsTheDomainShape;

export const NullableBackupPolicySchema = Type.Union([BackupPolicySchema, Type.Null()]);

/** The policy as given, once its schedule parses; VALIDATION_FAILED naming `<field>.schedule` otherwise. */
export function parseBackupPolicy(raw: BackupPolicy, field = 'backup'): BackupPolicy {
  if (raw.schedule !== undefined) {
    try {
      parseCron(raw.schedule);
    } catch (err) {
      throw new AppError('VALIDATION_FAILED', `${field}.schedule: ${(err as Error).message}`, { details: { field: `${field}.schedule` } });
    }
  }
  return {
    ...(raw.schedule !== undefined ? { schedule: raw.schedule.trim() } : {}),
    ...(raw.retention ? { retention: { ...raw.retention } } : {}),
  };
}
