// One server, as a Pelican user expects it: its state and the power actions
// on top, then tabs (a hash route each: #/instances/<id>/<tab>) — Console,
// Files, Startup, Backups, Schedules, Settings, Activity.

import { useState } from 'react';
import { ago, api, can, enc, forPeople, type Me } from '../api';
import { useResource } from '../live';
import type { HistoryEntry, InstanceView } from '../types';
import { ActionButton, ConfirmDialog, ErrorNote, Section, StateBadge } from '../ui';
import { Activity } from './instance/Activity';
import { ConsoleTab } from './instance/Console';
import { FilesTab } from './instance/Files';
import { Backups, Delete, Reinstall, Settings, Update } from './instance/Manage';
import { SchedulesTab } from './instance/Schedules';
import { StartupTab } from './instance/Startup';

/** Labels of the power actions; which of them apply now comes from the API (the instance's `actions`). */
const ACTION_LABELS: Readonly<Record<string, string>> = {
  start: 'Start',
  stop: 'Stop',
  restart: 'Restart',
  pause: 'Pause',
  resume: 'Resume',
};

const TABS: ReadonlyArray<[tab: string, label: string]> = [
  ['console', 'Console'],
  ['files', 'Files'],
  ['startup', 'Startup'],
  ['backups', 'Backups'],
  ['schedules', 'Schedules'],
  ['settings', 'Settings'],
  ['activity', 'Activity'],
];

export function InstancePage({ me, id, tab: asked }: { me: Me; id: string; tab: string | undefined }) {
  const inst = useResource<InstanceView>(`/instances/${enc(id)}`, ['instance'], id);
  const history = useResource<{ history: HistoryEntry[] }>(`/instances/${enc(id)}/history?limit=50`, ['instance'], id);
  const i = inst.data;
  const write = can(me, 'instances');
  const tab = TABS.some(([t]) => t === asked) ? asked! : 'console';
  if (inst.error && !i)
    return (
      <>
        <h1>Instance {id}</h1>
        <ErrorNote error={inst.error} />
        <p>
          <a href="#/instances">Back to instances</a>
        </p>
      </>
    );
  if (!i) return <p aria-busy="true">Loading…</p>;
  const actions = (i.actions ?? []).filter((a) => a in ACTION_LABELS);
  const label = TABS.find(([t]) => t === tab)![1];
  return (
    <>
      <p className="back">
        <a href="#/instances">← Instances</a>
      </p>
      <h1>
        {i.name} <StateBadge state={i.state} />
      </h1>
      <ErrorNote error={inst.error} />
      <Section
        title="Status"
        actions={
          write ? (
            <div className="row wrap" role="group" aria-label="Lifecycle actions">
              {actions.map((a) => (
                <ActionButton
                  key={a}
                  label={ACTION_LABELS[a]!}
                  run={() => api('POST', `/instances/${enc(id)}/${a}`, a === 'stop' ? {} : undefined)}
                />
              ))}
              {actions.length === 0 ? (
                <span className="muted small" data-testid="no-actions">
                  {noActionText(i)}
                </span>
              ) : null}
            </div>
          ) : null
        }
      >
        {write ? <Kill instance={i} /> : null}
        <dl className="facts">
          <div>
            <dt>State</dt>
            <dd data-testid="instance-state">{i.state}</dd>
          </div>
          <div>
            <dt>Reason</dt>
            <dd>{i.stateReason ? forPeople(i.stateReason) : '–'}</dd>
          </div>
          <div>
            <dt>Host</dt>
            <dd>{i.hostId ?? '–'}</dd>
          </div>
          <div>
            <dt>Endpoint</dt>
            <dd>
              {i.endpoint && i.state !== 'archived' ? (
                <code>
                  {i.endpoint.host}:{i.endpoint.port}
                </code>
              ) : (
                '–'
              )}
            </dd>
          </div>
          <div>
            <dt>Players</dt>
            <dd>{i.players ? `${i.players.online} / ${i.players.max}` : '–'}</dd>
          </div>
          <div>
            <dt>Active action</dt>
            <dd data-testid="active-action">{i.activeAction ? i.activeAction.kind : 'none'}</dd>
          </div>
          <div>
            <dt>Group / variant</dt>
            <dd>
              {i.groupId} / {i.variantId}
            </dd>
          </div>
          <div>
            <dt>Desired</dt>
            <dd>{i.desiredState}</dd>
          </div>
          <div>
            <dt>Image</dt>
            <dd>
              <code>{i.image}</code>
            </dd>
          </div>
          {i.maintenance?.enabled ? (
            <div>
              <dt>Maintenance</dt>
              <dd>{i.maintenance.message}</dd>
            </div>
          ) : null}
          {i.crashLoop.tripped ? (
            <div>
              <dt>Crash loop</dt>
              <dd>tripped {ago(i.crashLoop.trippedAt)}</dd>
            </div>
          ) : null}
        </dl>
      </Section>
      <nav className="tabs" aria-label="Server sections">
        <ul>
          {TABS.map(([t, l]) => (
            <li key={t}>
              <a href={`#/instances/${enc(id)}/${t}`} aria-current={t === tab ? 'page' : undefined}>
                {l}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <div className="tab-panel" data-tab={tab} aria-label={label} role="region">
        {tab === 'console' ? <ConsoleTab instance={i} history={history.data?.history ?? []} write={write} /> : null}
        {tab === 'files' ? <FilesTab id={id} write={can(me, 'files')} /> : null}
        {tab === 'startup' ? <StartupTab instance={i} me={me} write={write} /> : null}
        {tab === 'backups' ? <Backups instance={i} write={write} /> : null}
        {tab === 'schedules' ? <SchedulesTab id={id} write={write} /> : null}
        {tab === 'settings' ? (
          <>
            <Settings instance={i} write={write} />
            {write ? <Update instance={i} /> : null}
            {write ? <Reinstall instance={i} /> : null}
            {write ? <Delete instance={i} /> : null}
          </>
        ) : null}
        {tab === 'activity' ? <Activity me={me} id={id} history={history} /> : null}
      </div>
    </>
  );
}

/**
 * Kill: SIGKILL for a stop that hangs (POST /instances/:id/kill), after a
 * confirmation. Drawn only where it applies: the instance view's `actions`
 * lists `kill` while a stop may run or an action that stops the server is in
 * progress (that action then finishes on its own).
 */
function Kill({ instance: i }: { instance: InstanceView }) {
  const [asking, setAsking] = useState(false);
  if (!(i.actions ?? []).includes('kill')) return null;
  const during = i.activeAction ? `the ${i.activeAction.kind} in progress ends at once and finishes` : 'the server stops at once';
  return (
    <div className="row kill">
      <button type="button" className="btn btn-danger" onClick={() => setAsking(true)}>
        Kill
      </button>
      <span className="muted small">
        {i.activeAction ? 'ends the hanging stop at once, without saving' : 'stops the container at once, without saving'}
      </span>
      <ConfirmDialog
        open={asking}
        title={`Kill ${i.name}`}
        confirmLabel="Kill"
        onClose={() => setAsking(false)}
        onConfirm={() => api('POST', `/instances/${enc(i.id)}/kill`)}
      >
        <p>
          The container of <strong>{i.name}</strong> is killed now: {during}. The server does not save; whatever it had not written is lost.
        </p>
      </ConfirmDialog>
    </div>
  );
}

/** Why no power button is drawn: the action in flight, or the state. */
function noActionText(i: InstanceView): string {
  if (i.activeAction) return `${i.activeAction.kind} in progress…`;
  if (i.state === 'installing') return 'installing…';
  if (i.crashLoop.tripped) return 'crash loop tripped: an administrator resets it after diagnosis';
  return `nothing to run while ${i.state.replace(/_/g, ' ')}`;
}
