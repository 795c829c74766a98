// Rules the panel shares with the server at run time (plain values, no schemas):
// the CSRF header a cookie-authenticated call must send, the kinds of the
// change events GET /events streams, and the header naming a log's container.

/** A mutation authenticated by the panel's session cookie must send `x-endercloud-csrf: 1` (server/auth/guard.ts). */
export const CSRF_HEADER = 'x-endercloud-csrf';
export const CSRF_VALUE = '1';

/**
 * GET /instances/:id/logs?follow=true names the container whose log it streams (the host's container id):
 * the console tells a new container (a replacement) from a reconnect to the same one by it.
 */
export const LOG_CONTAINER_HEADER = 'x-endercloud-container';

/** What GET /events names as changed (server/changes). */
export const CHANGE_KINDS = ['instance', 'host', 'group', 'system', 'players'] as const;
export type ChangeKind = (typeof CHANGE_KINDS)[number];

/** One `change` event: its kind and the changed row's id when the write names one. */
export interface Change {
  kind: ChangeKind;
  id?: string;
}
