// The Schedules tab (Pelican's model): the instance's cron schedules with
// their next run, enabled switch and last result; create, edit and delete
// with their tasks (a command, a power action, a backup; each with an offset
// and continueOnFailure), run now, enable/disable. The server checks the
// cron and the tasks: its message is shown at the field it names.

import { useState, type ReactNode } from 'react';
import { ago, ApiError, call, forPeople, path, type Answer, type BodyOf } from '../../api';
import { useResource } from '../../live';
import { ActionButton, ConfirmDialog, Empty, ErrorNote, Section } from '../../ui';

type Schedule = Answer<'GET /instances/:id/schedules'>['schedules'][number];
type Definition = BodyOf<'POST /instances/:id/schedules'>;
type Task = Definition['tasks'][number];

/** What a schedule's power task may run (`kill` ends a stop that hangs, or stops with SIGKILL). */
const POWER = ['start', 'stop', 'restart', 'kill'] as const;
const MAX_TASKS = 10;
const ACTION_LABELS: Readonly<Record<Task['action'], string>> = { command: 'Send a command', power: 'Power action', backup: 'Backup' };

const emptyTask = (): Task => ({ action: 'command', payload: '', offsetSeconds: 0, continueOnFailure: false });
const emptyDefinition = (): Definition => ({ name: '', cron: '0 4 * * *', enabled: true, onlyWhenOnline: false, tasks: [emptyTask()] });

/**
 * The field a refusal names: the body schema's "body/tasks/0/offsetSeconds must be <= 900" and the
 * schedule check's "cron: …" / "tasks/1/payload: …", as "cron", "tasks.1.payload"; and its problem.
 */
function scheduleFieldError(error: unknown): { field: string; message: string } | undefined {
  if (!(error instanceof ApiError) || (error.status !== 400 && error.status !== 501)) return undefined;
  const m = /^(?:body\/)?((?:name|cron|enabled|onlyWhenOnline|tasks)(?:\/\d+(?:\/[A-Za-z]+)?)?):?\s+([\s\S]+)$/.exec(error.message);
  if (!m) return undefined;
  return { field: m[1]!.replace(/\//g, '.'), message: forPeople(m[2]!) };
}

function when(ms: number | null): string {
  if (ms === null) return '–';
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 16).replace('T', ' ')} UTC (${ago(iso)})`;
}

/** One task in words: "say hello", "restart", "backup (nightly)"; with its offset and failure rule. */
function taskText(t: Task): string {
  const what =
    t.action === 'command'
      ? `command ${t.payload}`
      : t.action === 'power'
        ? `power ${t.payload}`
        : `backup${t.payload ? ` (${t.payload})` : ''}`;
  const rules = [t.offsetSeconds ? `after ${t.offsetSeconds} s` : null, t.continueOnFailure ? 'continues on failure' : null].filter(
    Boolean,
  );
  return rules.length ? `${what} — ${rules.join(', ')}` : what;
}

function lastText(s: Schedule): string {
  if (s.running) return 'running now';
  if (!s.lastResult) return 'never run';
  return `${s.lastResult} ${ago(s.lastRunAt === null ? null : new Date(s.lastRunAt).toISOString())}${s.lastError ? `: ${forPeople(s.lastError)}` : ''}`;
}

const definitionOf = (s: Schedule): Definition => ({
  name: s.name,
  cron: s.cron,
  enabled: s.enabled,
  onlyWhenOnline: s.onlyWhenOnline,
  tasks: s.tasks.map((t) => ({ ...t })),
});

export function SchedulesTab({ id, write }: { id: string; write: boolean }) {
  // Schedules have no change event of their own; a run touches the instance, whose changes reload the list.
  const list = useResource<Answer<'GET /instances/:id/schedules'>>(path('GET /instances/:id/schedules', { id }), ['instance'], id);
  /** The form: a new schedule (no id) or the one being edited. */
  const [editing, setEditing] = useState<{ scheduleId?: string; draft: Definition }>();
  const [deleting, setDeleting] = useState<Schedule>();
  const [status, setStatus] = useState<string>();
  const schedules = list.data?.schedules ?? [];
  return (
    <>
      <Section
        title="Schedules"
        actions={
          <div className="row wrap">
            <button type="button" className="btn" onClick={list.reload}>
              Reload
            </button>
            {write && !editing ? (
              <button type="button" className="btn btn-primary" onClick={() => setEditing({ draft: emptyDefinition() })}>
                New schedule
              </button>
            ) : null}
          </div>
        }
      >
        <ErrorNote error={list.error} />
        {status ? (
          <p role="status" className="muted" data-testid="schedules-status">
            {status}
          </p>
        ) : null}
        <p className="muted small">
          Cron times are UTC (minute hour day-of-month month day-of-week). A run&apos;s tasks go in order, each after its offset.
        </p>
        {list.loading && !list.data ? <p aria-busy="true">Loading…</p> : null}
        {list.data && schedules.length === 0 ? <Empty>No schedule yet.</Empty> : null}
        {schedules.length > 0 ? (
          <div className="table-wrap" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Schedule</th>
                  <th scope="col">Cron (UTC)</th>
                  <th scope="col">Next run</th>
                  <th scope="col">Enabled</th>
                  <th scope="col">Last result</th>
                  <th scope="col">Tasks</th>
                  {write ? (
                    <th scope="col">
                      <span className="sr-only">Actions</span>
                    </th>
                  ) : null}
                </tr>
              </thead>
              <tbody>
                {schedules.map((s) => (
                  <tr key={s.id} data-schedule={s.name}>
                    <th scope="row">
                      {s.name}
                      {s.onlyWhenOnline ? <span className="muted small"> · only when online</span> : null}
                    </th>
                    <td>
                      <code>{s.cron}</code>
                    </td>
                    <td data-testid="schedule-next">{s.enabled ? when(s.nextRunAt) : 'disabled'}</td>
                    <td data-testid="schedule-enabled">{s.enabled ? 'yes' : 'no'}</td>
                    <td data-testid="schedule-last" data-result={s.running ? 'running' : (s.lastResult ?? 'none')}>
                      {lastText(s)}
                    </td>
                    <td>
                      <ol className="words">
                        {s.tasks.map((t, n) => (
                          <li key={n}>{taskText(t)}</li>
                        ))}
                      </ol>
                    </td>
                    {write ? (
                      <td>
                        <div className="row wrap">
                          <ActionButton
                            label={`Run ${s.name} now`}
                            onDone={() => {
                              setStatus(`${s.name} started.`);
                              list.reload();
                            }}
                            run={() => call('POST /instances/:id/schedules/:scheduleId/run', { id, scheduleId: s.id })}
                          />
                          <ActionButton
                            label={s.enabled ? `Disable ${s.name}` : `Enable ${s.name}`}
                            onDone={() => {
                              setStatus(`${s.name} ${s.enabled ? 'disabled' : 'enabled'}.`);
                              list.reload();
                            }}
                            run={() =>
                              call(
                                'PUT /instances/:id/schedules/:scheduleId',
                                { id, scheduleId: s.id },
                                { body: { ...definitionOf(s), enabled: !s.enabled } },
                              )
                            }
                          />
                          <button
                            type="button"
                            className="btn"
                            onClick={() => {
                              setStatus(undefined);
                              setEditing({ scheduleId: s.id, draft: definitionOf(s) });
                            }}
                          >
                            Edit {s.name}
                          </button>
                          <button type="button" className="btn" onClick={() => setDeleting(s)}>
                            Delete {s.name}
                          </button>
                        </div>
                      </td>
                    ) : null}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        ) : null}
      </Section>
      {write && editing ? (
        <ScheduleForm
          key={editing.scheduleId ?? 'new'}
          id={id}
          scheduleId={editing.scheduleId}
          initial={editing.draft}
          onCancel={() => setEditing(undefined)}
          onSaved={(s) => {
            setEditing(undefined);
            setStatus(`Saved ${s.name}.`);
            list.reload();
          }}
        />
      ) : null}
      {write ? (
        <ConfirmDialog
          open={deleting !== undefined}
          title={`Delete schedule ${deleting?.name ?? ''}`}
          confirmLabel="Delete"
          onClose={() => setDeleting(undefined)}
          onConfirm={async () => {
            const s = deleting!;
            await call('DELETE /instances/:id/schedules/:scheduleId', { id, scheduleId: s.id });
            setStatus(`Deleted ${s.name}.`);
            list.reload();
          }}
        >
          <p>The schedule and its tasks are removed; a run in progress finishes.</p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}

/** The create/edit form: the schedule's fields and its tasks in order. */
function ScheduleForm({
  id,
  scheduleId,
  initial,
  onCancel,
  onSaved,
}: {
  id: string;
  scheduleId: string | undefined;
  initial: Definition;
  onCancel: () => void;
  onSaved: (s: Schedule) => void;
}) {
  const [d, setD] = useState<Definition>(initial);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const f = scheduleFieldError(error);
  const at = (field: string) => (f && f.field === field ? f.message : undefined);
  const fields = [
    'name',
    'cron',
    'enabled',
    'onlyWhenOnline',
    'tasks',
    ...d.tasks.flatMap((_, n) => ['payload', 'offsetSeconds', 'action', 'continueOnFailure'].map((k) => `tasks.${n}.${k}`)),
    ...d.tasks.map((_, n) => `tasks.${n}`),
  ];
  const setTask = (n: number, patch: Partial<Task>) =>
    setD((x) => ({ ...x, tasks: x.tasks.map((t, i) => (i === n ? { ...t, ...patch } : t)) }));
  const prefix = `sched-${scheduleId ?? 'new'}`;
  const title = scheduleId ? `Edit ${initial.name}` : 'New schedule';
  return (
    <Section title={title} id={`${prefix}-form`}>
      <form
        aria-label={title}
        onSubmit={(e) => {
          e.preventDefault();
          setBusy(true);
          setError(undefined);
          (scheduleId
            ? call('PUT /instances/:id/schedules/:scheduleId', { id, scheduleId }, { body: d })
            : call('POST /instances/:id/schedules', { id }, { body: d })
          )
            .then(onSaved, setError)
            .finally(() => setBusy(false));
        }}
      >
        <div className="form-grid">
          <Field label="Name" id={`${prefix}-name`} error={at('name')}>
            {(p) => (
              <input {...p} value={d.name} maxLength={100} onChange={(e) => setD({ ...d, name: e.target.value })} autoComplete="off" />
            )}
          </Field>
          <Field
            label="Cron (UTC)"
            id={`${prefix}-cron`}
            error={at('cron')}
            help="minute hour day-of-month month day-of-week, e.g. 0 4 * * *"
          >
            {(p) => (
              <input {...p} value={d.cron} onChange={(e) => setD({ ...d, cron: e.target.value })} autoComplete="off" spellCheck={false} />
            )}
          </Field>
        </div>
        <label className="check">
          <input type="checkbox" checked={d.enabled} onChange={(e) => setD({ ...d, enabled: e.target.checked })} /> enabled
        </label>
        <label className="check">
          <input type="checkbox" checked={d.onlyWhenOnline} onChange={(e) => setD({ ...d, onlyWhenOnline: e.target.checked })} /> only when
          online (otherwise the run is skipped)
        </label>
        <h3>Tasks</h3>
        {at('tasks') ? (
          <p className="error small" role="alert">
            {at('tasks')}
          </p>
        ) : null}
        <ol className="stack">
          {d.tasks.map((t, n) => (
            <li key={n} data-task={n}>
              <fieldset className="vars">
                <legend>Task {n + 1}</legend>
                <div className="form-grid">
                  <Field label={`Task ${n + 1} action`} id={`${prefix}-t${n}-action`} error={at(`tasks.${n}.action`) ?? at(`tasks.${n}`)}>
                    {(p) => (
                      <select
                        {...p}
                        value={t.action}
                        onChange={(e) => {
                          const action = e.target.value as Task['action'];
                          setTask(n, { action, payload: action === 'power' ? 'restart' : '' });
                        }}
                      >
                        {(Object.keys(ACTION_LABELS) as Task['action'][]).map((a) => (
                          <option key={a} value={a}>
                            {ACTION_LABELS[a]}
                          </option>
                        ))}
                      </select>
                    )}
                  </Field>
                  <Field
                    label={
                      t.action === 'command'
                        ? `Task ${n + 1} command`
                        : t.action === 'power'
                          ? `Task ${n + 1} power action`
                          : `Task ${n + 1} note (optional)`
                    }
                    id={`${prefix}-t${n}-payload`}
                    error={at(`tasks.${n}.payload`)}
                  >
                    {(p) =>
                      t.action === 'power' ? (
                        <select {...p} value={t.payload} onChange={(e) => setTask(n, { payload: e.target.value })}>
                          {!(POWER as readonly string[]).includes(t.payload) ? (
                            <option value={t.payload}>{t.payload || '(choose)'}</option>
                          ) : null}
                          {POWER.map((a) => (
                            <option key={a} value={a}>
                              {a}
                            </option>
                          ))}
                        </select>
                      ) : (
                        <input
                          {...p}
                          value={t.payload}
                          maxLength={1024}
                          onChange={(e) => setTask(n, { payload: e.target.value })}
                          autoComplete="off"
                          spellCheck={false}
                        />
                      )
                    }
                  </Field>
                  <Field
                    label={`Task ${n + 1} offset (seconds)`}
                    id={`${prefix}-t${n}-offset`}
                    error={at(`tasks.${n}.offsetSeconds`)}
                    help="wait after the previous task (or the run start); 0–900"
                  >
                    {(p) => (
                      <input
                        {...p}
                        type="number"
                        min={0}
                        max={900}
                        step={1}
                        value={Number.isFinite(t.offsetSeconds) ? t.offsetSeconds : ''}
                        onChange={(e) => setTask(n, { offsetSeconds: e.target.value === '' ? 0 : Math.trunc(Number(e.target.value)) })}
                      />
                    )}
                  </Field>
                </div>
                <div className="row wrap">
                  <label className="check">
                    <input
                      type="checkbox"
                      checked={t.continueOnFailure}
                      onChange={(e) => setTask(n, { continueOnFailure: e.target.checked })}
                    />{' '}
                    Task {n + 1}: continue on failure
                  </label>
                  <button
                    type="button"
                    className="btn"
                    disabled={n === 0}
                    onClick={() =>
                      setD((x) => {
                        const tasks = [...x.tasks];
                        [tasks[n - 1], tasks[n]] = [tasks[n]!, tasks[n - 1]!];
                        return { ...x, tasks };
                      })
                    }
                  >
                    Move task {n + 1} up
                  </button>
                  <button
                    type="button"
                    className="btn"
                    disabled={d.tasks.length === 1}
                    onClick={() => setD((x) => ({ ...x, tasks: x.tasks.filter((_, i) => i !== n) }))}
                  >
                    Remove task {n + 1}
                  </button>
                </div>
              </fieldset>
            </li>
          ))}
        </ol>
        <div className="row wrap">
          <button
            type="button"
            className="btn"
            disabled={d.tasks.length >= MAX_TASKS}
            onClick={() => setD((x) => ({ ...x, tasks: [...x.tasks, emptyTask()] }))}
          >
            Add task
          </button>
          <span className="grow" />
          <button type="button" className="btn" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={busy}>
            {busy ? 'Saving…' : 'Save schedule'}
          </button>
        </div>
        <ErrorNote error={f && fields.includes(f.field) ? undefined : error} />
      </form>
    </Section>
  );
}

/** A labelled field with its help and the server's message for it (`aria-invalid`, `role="alert"`). */
function Field({
  label,
  id,
  error,
  help,
  children,
}: {
  label: string;
  id: string;
  error: string | undefined;
  help?: string;
  children: (props: { id: string; 'aria-invalid': true | undefined; 'aria-describedby': string | undefined }) => ReactNode;
}) {
  const describedBy = [help ? `${id}-help` : null, error ? `${id}-error` : null].filter(Boolean).join(' ') || undefined;
  return (
    <div className={error ? 'field invalid' : 'field'} data-field={id}>
      <label htmlFor={id}>{label}</label>
      {children({ id, 'aria-invalid': error ? true : undefined, 'aria-describedby': describedBy })}
      {help ? (
        <span id={`${id}-help`} className="muted small">
          {help}
        </span>
      ) : null}
      {error ? (
        <span id={`${id}-error`} className="error small" role="alert">
          {error}
        </span>
      ) : null}
    </div>
  );
}
