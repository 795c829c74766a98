// The public API's routes, one entry per `METHOD /path` (below /api/v1, as
// Fastify names it): the success answers by status code, the media type of an
// answer that is not JSON, and the request body clients send where it is
// defined here. The server attaches `ok` (plus ErrorBody for 4xx/5xx) as each
// route's response schema (server/app.ts, responseSchemaOf); the typed client
// (client.ts) reads its types from the same entries. A route missing here
// fails test/server/public-contract.test.ts.

import { Type, type TArray, type TObject, type TSchema } from '@sinclair/typebox';
import * as A from './answers.js';
import * as B from './bodies.js';
import * as V from './views.js';
import { EnrolAnswer, EnrolBody } from '../agent-api.js';

export interface RouteContract {
  /** The success answers by status code. */
  ok: Readonly<Record<number, TSchema>>;
  /** Not JSON: the answer's media type (its schema describes the bytes for OpenAPI only). */
  media?: string;
  body?: TSchema;
}

const raw = Type.String({ description: 'the bytes of the answer' });
const list = <K extends string, T extends TSchema>(key: K, item: T): TObject<{ [P in K]: TArray<T> }> =>
  Type.Object({ [key]: Type.Array(item) } as { [P in K]: TArray<T> });
const Deleted = <T extends Record<string, TSchema>>(fields: T) => Type.Object({ ...fields, deleted: Type.Literal(true) });
const powerAction = { ok: { 200: A.ActionAccepted, 202: A.ActionAccepted } } as const;
const backup = { ok: { 202: A.ActionAccepted } } as const;

export const PUBLIC_ROUTES = {
  // system (routes/system.ts)
  'GET /health': { ok: { 200: A.HealthAnswer } },
  'GET /ready': { ok: { 200: A.ReadyAnswer } },

  // hosts (routes/hosts.ts, routes/kept-data.ts)
  'POST /agents/:agentId/heartbeat': { ok: { 200: A.HeartbeatAnswer } },
  'POST /agents/enrol': { ok: { 200: EnrolAnswer }, body: EnrolBody },
  'POST /hosts/join-tokens': {
    ok: { 201: Type.Object({ ...V.JoinTokenView.properties, secret: Type.String({ description: 'shown once' }) }) },
    body: B.JoinTokenBody,
  },
  'GET /hosts/join-tokens': { ok: { 200: list('joinTokens', V.JoinTokenView) } },
  'DELETE /hosts/join-tokens/:id': { ok: { 200: V.JoinTokenView } },
  'POST /hosts/:id/revoke-credential': { ok: { 200: V.HostView } },
  'GET /hosts': { ok: { 200: list('hosts', V.HostView) } },
  'GET /hosts/:id': { ok: { 200: V.HostView } },
  'POST /hosts/:id/maintenance': { ok: { 200: V.HostView }, body: B.MaintenanceBody },
  'DELETE /hosts/:id': { ok: { 200: A.HostRemovedAnswer } },
  'GET /hosts/:id/unclaimed': { ok: { 200: A.UnclaimedAnswer } },
  'DELETE /hosts/:id/unclaimed/:instanceId': { ok: { 202: A.UnclaimedDeleted } },
  'POST /hosts/:id/unclaimed/:instanceId/adopt': { ok: { 201: V.InstanceView } },
  'GET /kept-data': { ok: { 200: A.KeptDataAnswer } },
  'DELETE /kept-data/:hostId/:instanceId': { ok: { 200: A.KeptDataPurged } },
  'POST /kept-data/:hostId/:instanceId/attach': { ok: { 200: A.KeptDataAttached } },

  // layers and imports (routes/layers.ts, routes/imports.ts)
  'PUT /template-layers/:id': { ok: { 200: A.LayerUploaded, 201: A.LayerUploaded } },
  'GET /template-layers': { ok: { 200: list('layers', V.LayerView) } },
  'DELETE /template-layers/:id': { ok: { 200: list('deleted', V.LayerView) } },
  'POST /template-layers/prune': { ok: { 200: list('deleted', V.LayerView) } },
  'GET /template-layers/:id/archive': { ok: { 200: raw }, media: 'application/gzip' },
  'PUT /imports': { ok: { 201: V.ImportView } },
  'GET /imports/:uploadId': { ok: { 200: V.ImportView } },

  // templates and groups (routes/catalog.ts, routes/eggs.ts)
  'PUT /templates/:name/versions/:version': { ok: { 200: A.TemplatePutAnswer, 201: A.TemplatePutAnswer } },
  'GET /templates': { ok: { 200: list('templates', V.TemplateView) } },
  'GET /templates/:name/versions/:version': { ok: { 200: V.TemplateView } },
  'DELETE /templates/:name/versions/:version': { ok: { 200: Deleted({ name: Type.String(), version: Type.String() }) } },
  'POST /templates/import-egg': { ok: { 200: A.EggImportAnswer, 201: A.EggImportAnswer }, body: B.ImportEggBody },
  'PUT /groups/:id': { ok: { 200: A.GroupPutAnswer, 201: A.GroupPutAnswer } },
  'GET /groups': { ok: { 200: list('groups', V.GroupView) } },
  'GET /groups/:id': { ok: { 200: V.GroupView } },
  'DELETE /groups/:id': { ok: { 200: Deleted({ id: Type.String() }) } },

  // instances (routes/instances.ts, instance-*.ts, eggs.ts, router-sessions.ts)
  'POST /instances': { ok: { 202: A.InstanceCreated }, body: B.CreateInstanceBody },
  'POST /instances/preview': { ok: { 200: A.PreviewAnswer }, body: B.CreateInstanceBody },
  'GET /instances': { ok: { 200: list('instances', V.InstanceView) } },
  'GET /instances/:id': { ok: { 200: V.InstanceView } },
  'GET /instances/:id/history': { ok: { 200: A.HistoryAnswer } },
  'GET /instances/:id/revisions': { ok: { 200: A.RevisionsAnswer } },
  'GET /instances/:id/logs': { ok: { 200: raw }, media: 'text/plain' },
  'GET /instances/:id/players': { ok: { 200: A.PlayersAnswer } },
  'POST /instances/:id/console': { ok: { 200: A.ConsoleAnswer }, body: B.ConsoleBody },
  'POST /instances/:id/start': powerAction,
  'POST /instances/:id/stop': { ...powerAction, body: B.StopBody },
  'POST /instances/:id/restart': powerAction,
  'POST /instances/:id/kill': { ok: { 200: A.KillAccepted, 202: A.KillAccepted } },
  'POST /instances/:id/pause': powerAction,
  'POST /instances/:id/resume': powerAction,
  'POST /instances/:id/reset-crash-loop': { ok: { 200: V.InstanceView } },
  'POST /instances/:id/events': { ok: { 202: A.EventAccepted } },
  'PATCH /instances/:id/settings': { ok: { 200: A.SettingsAnswer, 202: A.SettingsAnswer }, body: B.SettingsBody },
  'DELETE /instances/:id': { ok: { 202: A.DeleteAccepted }, body: B.DeleteInstanceBody },
  'POST /instances/:id/maintenance': { ok: { 200: V.InstanceView }, body: B.MaintenanceBody },
  'POST /maintenance': { ok: { 200: A.MaintenanceAnswer }, body: B.MaintenanceBody },
  'GET /maintenance': { ok: { 200: A.MaintenanceAnswer } },
  'POST /instances/:id/backup': { ...backup, body: B.BackupBody },
  'POST /instances/:id/backups': { ...backup, body: B.BackupBody },
  'GET /instances/:id/backups': { ok: { 200: A.BackupsAnswer } },
  'GET /instances/:id/backups/:backupId/download': { ok: { 200: raw }, media: 'application/gzip' },
  'POST /instances/:id/reinstall': powerAction,
  // files (routes/instance-files.ts)
  'GET /instances/:id/files': { ok: { 200: A.FileList } },
  'GET /instances/:id/files/content': { ok: { 200: raw }, media: 'application/octet-stream' },
  'PUT /instances/:id/files/content': { ok: { 200: A.FileWritten } },
  'POST /instances/:id/files/directory': { ok: { 200: A.FileDirectoryMade } },
  'POST /instances/:id/files/rename': { ok: { 200: A.FileRenamed } },
  'POST /instances/:id/files/delete': { ok: { 200: A.FileDeleted } },
  'POST /instances/:id/files/archive': { ok: { 200: A.FileWritten } },
  'POST /instances/:id/files/extract': { ok: { 200: A.FileExtracted } },
  // console graphs (routes/instance-stats.ts); ?follow=true answers text/event-stream instead
  'GET /instances/:id/stats': { ok: { 200: A.StatsAnswer } },
  // schedules (routes/instance-schedules.ts)
  'GET /instances/:id/schedules': { ok: { 200: A.ScheduleList } },
  'POST /instances/:id/schedules': { ok: { 201: A.ScheduleView }, body: B.ScheduleInput },
  'GET /instances/:id/schedules/:scheduleId': { ok: { 200: A.ScheduleView } },
  'PUT /instances/:id/schedules/:scheduleId': { ok: { 200: A.ScheduleView }, body: B.ScheduleInput },
  'DELETE /instances/:id/schedules/:scheduleId': { ok: { 200: Deleted({ id: Type.String(), instanceId: Type.String() }) } },
  'POST /instances/:id/schedules/:scheduleId/run': { ok: { 202: A.ScheduleRunAccepted } },
  'GET /instances/:id/backup-policy': { ok: { 200: A.BackupPolicyAnswer } },
  'PUT /instances/:id/backup-policy': { ok: { 200: A.BackupPolicyAnswer } },
  'POST /instances/:id/restore': { ok: { 202: A.RestoreAccepted }, body: B.RestoreBody },
  'GET /instances/:id/update-plan': { ok: { 200: A.UpdatePlanAnswer } },
  'POST /instances/:id/update': { ok: { 202: A.UpdateAccepted }, body: B.UpdateBody },

  // installation requests (routes/installation-requests.ts)
  'POST /installation-requests': { ok: { 201: V.InstallationRequestView } },
  'GET /installation-requests': { ok: { 200: list('requests', V.InstallationRequestView) } },
  'GET /installation-requests/:id': { ok: { 200: V.InstallationRequestView } },
  'GET /installation-requests/:id/preview': { ok: { 200: A.InstallationPreview } },
  'POST /installation-requests/:id/approve': { ok: { 200: A.InstallationApproved } },
  'POST /installation-requests/:id/reject': { ok: { 200: A.InstallationDecided } },

  // audit, commands, tokens (routes/audit.ts, routes/commands.ts)
  'GET /audit': { ok: { 200: list('entries', V.AuditEntryView) } },
  'GET /commands/:id': { ok: { 200: V.CommandView } },
  'GET /commands': { ok: { 200: list('commands', V.CommandView) } },
  'POST /tokens': {
    ok: { 201: Type.Object({ ...V.TokenView.properties, secret: Type.String({ description: 'shown once' }) }) },
    body: B.TokenBody,
  },
  'GET /tokens': { ok: { 200: list('tokens', V.TokenView) } },
  'DELETE /tokens/:id': { ok: { 200: V.TokenView } },

  // the router contract (registry/registry-routes.ts, routes/transfers.ts, router-sessions.ts, fleet.ts, velocity.ts)
  'GET /registry': { ok: { 200: A.RegistrySnapshot } },
  'GET /registry/stream': { ok: { 200: raw }, media: 'text/event-stream' },
  'POST /transfers': { ok: { 201: A.TransferCreated } },
  'POST /transfers/claim': { ok: { 200: A.TransferClaim } },
  'GET /transfers': { ok: { 200: list('transfers', V.TransferView) } },
  'POST /instances/:id/evacuate': { ok: { 200: A.EvacuateAnswer } },
  'POST /router/sessions': { ok: { 204: Type.Null({ description: 'no content' }) } },
  'POST /router/groups/:id/join': { ok: { 200: A.GroupJoinAnswer } },
  'POST /router/transfers': { ok: { 201: A.RouterTransferAnswer } },
  'GET /router/velocity.toml': { ok: { 200: raw }, media: 'text/plain' },

  // fleets (routes/fleet.ts)
  'POST /groups/:id/spawn': { ok: { 200: A.SpawnAnswer, 202: A.SpawnAnswer }, body: B.SpawnBody },
  'POST /instances/:id/despawn': { ok: { 202: A.ActionAccepted }, body: B.DespawnBody },
  'POST /groups/:id/allocations': { ok: { 201: A.AllocationAnswer }, body: B.AllocationBody },
  'GET /groups/:id/allocations': { ok: { 200: A.AllocationsAnswer } },
  'DELETE /allocations/:id': { ok: { 200: A.AllocationReleased } },
  'GET /groups/:id/fleet': { ok: { 200: A.FleetAnswer } },
  'PUT /instances/:id/idle-tiers': { ok: { 200: A.IdleTiersAnswer }, body: B.IdleTiersBody },
  'PUT /groups/:id/idle-tiers': { ok: { 200: A.IdleTiersAnswer }, body: B.IdleTiersBody },
  'GET /system/idle-tiers': { ok: { 200: A.SystemIdleTiersAnswer } },
  'PUT /system/idle-tiers': { ok: { 200: A.SystemIdleTiersAnswer }, body: B.IdleTiersBody },

  // the panel (web/web-routes.ts)
  'POST /session': { ok: { 200: A.SignedIn }, body: B.LoginBody },
  'GET /session': { ok: { 200: A.SessionAnswer } },
  'DELETE /session': { ok: { 204: Type.Null({ description: 'no content' }) } },
  'GET /events': { ok: { 200: raw }, media: 'text/event-stream' },
} as const satisfies Record<string, RouteContract>;

export type PublicRoutes = typeof PUBLIC_ROUTES;
export type RouteKey = keyof PublicRoutes;
