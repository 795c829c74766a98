// The backup policy a group or an instance stores: a cron schedule (UTC) and a
// retention rule. Its request schema and parser are in contracts/backup-policy.ts,
// which checks at compile time that the schema's type is this one.

export interface BackupRetention {
  last?: number;
  daily?: number;
  weekly?: number;
}

export interface BackupPolicy {
  /** Five-field cron expression, evaluated in UTC; absent = no scheduled backups (retention still prunes). */
  schedule?: string;
  retention?: BackupRetention;
}
