// The wire form of a change between replicas: the change JSON plus the
// publishing process's origin id, so an adapter that hears its own message
// back (LISTEN/NOTIFY, pub/sub) skips it — it already delivered it locally.

import { CHANGE_KINDS } from '../../contracts/public-api/panel-rules.js';
import type { Change, ChangeKind } from './change-port.js';

const KINDS: ReadonlySet<string> = new Set<string>(CHANGE_KINDS);

/** The LISTEN/NOTIFY channel (NOTIFY is per database already); Redis uses `<prefix>:changes` (redis-change-port.ts). */
export const CHANGE_CHANNEL = 'endercloud_changes';

export function encodeChange(change: Change, origin: string): string {
  return JSON.stringify(change.id === undefined ? { kind: change.kind, origin } : { kind: change.kind, id: change.id, origin });
}

/** The change in a message from another replica; undefined for our own echo or anything malformed. */
export function decodeChange(payload: string | undefined, ownOrigin: string): Change | undefined {
  if (!payload) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(payload);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const { kind, id, origin } = v as { kind?: unknown; id?: unknown; origin?: unknown };
  if (origin === ownOrigin || typeof kind !== 'string' || !KINDS.has(kind)) return undefined;
  return typeof id === 'string' ? { kind: kind as ChangeKind, id } : { kind: kind as ChangeKind };
}

/** What listeners get after a reconnect: messages may have been missed, so refresh everything. */
export const RESYNC: Change = { kind: 'system' };
