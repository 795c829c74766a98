// One instance: state and its history timeline, players, endpoint, the live
// log and the console, actions, backups, settings, update and deletion.

import { useEffect, useRef, useState } from 'react';
import { ago, api, ApiError, bytes, call, can, CSRF, enc, forPeople, type Answer, type HistoryEntryView, type InstanceView, type Me } from '../api';
import { useResource, type Resource } from '../live';
import { ActionButton, ConfirmDialog, Empty, ErrorNote, Json, Section, StateBadge } from '../ui';

/** Labels of the power actions; which of them apply now comes from the API (the instance's `actions`). */
const ACTION_LABELS: Readonly<Record<string, string>> = { start: 'Start', stop: 'Stop', restart: 'Restart', pause: 'Pause', resume: 'Resume' };
/** States without a container (yet, or any more): no log to read. */
const NO_CONTAINER: readonly string[] = ['draft', 'installing', 'archived'];

export function InstancePage({ me, id }: { me: Me; id: string }) {
  const inst = useResource<Answer<'GET /instances/:id'>>(`/instances/${enc(id)}`, ['instance'], id);
  const history = useResource<Answer<'GET /instances/:id/history'>>(`/instances/${enc(id)}/history?limit=50`, ['instance'], id);
  const i = inst.data;
  const write = can(me, 'instances');
  if (inst.error && !i) return <><h1>Instance {id}</h1><ErrorNote error={inst.error} /><p><a href="#/instances">Back to instances</a></p></>;
  if (!i) return <p aria-busy="true">Loading…</p>;
  const actions = (i.actions ?? []).filter((a) => a in ACTION_LABELS);
  return (
    <>
      <p><a href="#/instances">← Instances</a></p>
      <h1>{i.name} <StateBadge state={i.state} /></h1>
      <ErrorNote error={inst.error} />
      <Section title="Status" actions={write ? (
        <div className="row wrap" role="group" aria-label="Lifecycle actions">
          {actions.map((a) => <ActionButton key={a} label={ACTION_LABELS[a]!} run={() => api('POST', `/instances/${enc(id)}/${a}`, a === 'stop' ? {} : undefined)} />)}
          {actions.length === 0 ? <span className="muted small" data-testid="no-actions">{noActionText(i)}</span> : null}
        </div>
      ) : null}>
        <dl className="facts">
          <div><dt>State</dt><dd data-testid="instance-state">{i.state}</dd></div>
          <div><dt>Reason</dt><dd>{i.stateReason ? forPeople(String(i.stateReason)) : '–'}</dd></div>
          <div><dt>Desired</dt><dd>{i.desiredState}</dd></div>
          <div><dt>Group / variant</dt><dd>{i.groupId} / {i.variantId}</dd></div>
          <div><dt>Host</dt><dd>{i.hostId ?? '–'}</dd></div>
          <div><dt>Endpoint</dt><dd>{i.endpoint && i.state !== 'archived' ? <code>{i.endpoint.host}:{i.endpoint.port}</code> : '–'}</dd></div>
          <div><dt>Players</dt><dd>{i.players ? `${i.players.online} / ${i.players.max}` : '–'}</dd></div>
          <div><dt>Image</dt><dd><code>{i.image}</code></dd></div>
          <div><dt>Active action</dt><dd data-testid="active-action">{i.activeAction ? i.activeAction.kind : 'none'}</dd></div>
          {i.maintenance?.enabled ? <div><dt>Maintenance</dt><dd>{i.maintenance.message}</dd></div> : null}
          {i.crashLoop?.tripped ? <div><dt>Crash loop</dt><dd>tripped {ago(i.crashLoop.trippedAt)}</dd></div> : null}
        </dl>
      </Section>
      <div className="grid two">
        <Timeline history={history} />
        <Players id={id} />
      </div>
      <LiveLog id={id} state={i.state} observed={i.observedState} history={history.data?.history ?? []} />
      {write ? <Console id={id} /> : null}
      <Backups instance={i} write={write} />
      <Settings instance={i} write={write} />
      {write ? <Update instance={i} /> : null}
      {write ? <Delete instance={i} /> : null}
    </>
  );
}

/** Why no power button is drawn: the action in flight, or the state. */
function noActionText(i: InstanceView): string {
  if (i.activeAction) return `${String(i.activeAction.kind)} in progress…`;
  if (i.state === 'installing') return 'installing…';
  if (i.crashLoop?.tripped) return 'crash loop tripped: an administrator resets it after diagnosis';
  return `nothing to run while ${String(i.state).replace(/_/g, ' ')}`;
}

function Timeline({ history: h }: { history: Resource<Answer<'GET /instances/:id/history'>> }) {
  const list = h.data?.history ?? [];
  return (
    <Section title="History">
      <ErrorNote error={h.error} />
      <ol className="timeline" aria-label="State history, newest first">
        {[...list].sort((a, b) => String(b.at).localeCompare(String(a.at))).map((e, n) => (
          <li key={`${String(e.at)}-${n}`}>
            <time dateTime={e.at} title={e.at}>{new Date(e.at).toLocaleTimeString()}</time>{' '}
            <span>{e.from ?? '∅'} → <StateBadge state={e.to} /></span>
            <div className="muted small">{forPeople(String(e.reason ?? ''))}{e.actor ? ` · ${e.actor}` : ''}</div>
          </li>
        ))}
      </ol>
    </Section>
  );
}

function Players({ id }: { id: string }) {
  const p = useResource<Answer<'GET /instances/:id/players'>>(`/instances/${enc(id)}/players`, ['players', 'instance'], id);
  const list = p.data?.players ?? [];
  return (
    <Section title="Players">
      <ErrorNote error={p.error} />
      <p>{p.data ? `${p.data.online} online` : '–'}{p.data?.probe ? ` (probe: ${p.data.probe.online} / ${p.data.probe.max})` : ''}</p>
      {list.length ? <ul className="list">{list.map((pl) => <li key={pl.uuid ?? pl.name}>{pl.name} <span className="muted small">since {ago(pl.connectedAt)}</span></li>)}</ul> : <Empty>No player reported by a router.</Empty>}
    </Section>
  );
}

const LOG_TAIL = 200;
const LOG_MAX_CHARS = 200_000;

/** The install script's last lines, as the history keeps them (`… install script … last lines:\n…`), newest first. */
function installOutput(history: readonly HistoryEntryView[]): string | undefined {
  const hit = [...history].sort((a, b) => String(b.at).localeCompare(String(a.at)))
    .map((e) => /install script[^\n]*last lines:\n([\s\S]*)$/.exec(String(e.reason ?? ''))?.[1])
    .find((text) => text !== undefined);
  return hit?.trimEnd();
}

/**
 * The log: `?follow=true` read as a stream. An answer that ends (no follow
 * support, or the container stopped) is shown with a note and read again when
 * the instance's state changes (an event, not a timer). Without a container
 * (installing, archived) nothing is asked: the pane says so, with the install
 * script's output when the history has it.
 */
function LiveLog({ id, state, observed, history }: { id: string; state: string; observed: string | null; history: readonly HistoryEntryView[] }) {
  const [text, setText] = useState('');
  /** The state the instance had when the last stream ended (null while one is open). */
  const endedAt = useRef<string | null>(null);
  const latestState = useRef(state);
  latestState.current = state;
  const [note, setNote] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [generation, setGeneration] = useState(0);
  const pre = useRef<HTMLPreElement>(null);
  const container = !NO_CONTAINER.includes(state) && observed !== 'absent';
  const install = installOutput(history);
  useEffect(() => {
    setNote(undefined);
    setError(undefined);
    if (!container) {
      setText('');
      endedAt.current = latestState.current;
      return undefined;
    }
    const abort = new AbortController();
    endedAt.current = null;
    const started = Date.now();
    let first = true;
    (async () => {
      const res = await fetch(`/api/v1/instances/${enc(id)}/logs?follow=true&tail=${LOG_TAIL}`, { credentials: 'same-origin', headers: CSRF, signal: abort.signal });
      if (!res.ok || !res.body) {
        const body = (await res.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
        throw new ApiError(res.status, String(body.error?.code ?? `HTTP_${res.status}`), String(body.error?.message ?? res.statusText));
      }
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const chunk = decoder.decode(value, { stream: true });
        setText((t) => (first ? chunk : t + chunk).slice(-LOG_MAX_CHARS));
        first = false;
      }
      if (first) setText('');
      endedAt.current = latestState.current;
      const running = ['starting', 'online', 'degraded'].includes(latestState.current);
      setNote(!running
        ? (first ? 'The server is not running; the log follows when it starts.' : `The server is not running: its last ${LOG_TAIL} lines. The log follows again when it starts.`)
        : Date.now() - started < 2000
          ? `The log stream ended at once: the last ${LOG_TAIL} lines. It is read again when the state changes, or with Reconnect.`
          : 'The log stream ended (the container stopped or was replaced).');
    })().catch((err: unknown) => {
      if (abort.signal.aborted) return;
      endedAt.current = latestState.current;
      // No container on the host (yet): nothing to show, which is not an error.
      if (err instanceof ApiError && err.status === 404) {
        setText('');
        setNote('No container yet: the log starts when the server does.');
      } else setError(err);
    });
    return () => abort.abort();
  }, [id, generation, container]);
  useEffect(() => {
    if (endedAt.current !== null && endedAt.current !== state) setGeneration((g) => g + 1);
  }, [state]);
  useEffect(() => {
    const el = pre.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [text]);
  const waiting = state === 'installing' ? 'Installing… the log starts when the server does.'
    : state === 'archived' ? 'Archived: the container is gone (the world is kept). The log starts again when the server is started.'
      : 'No log yet.';
  return (
    <Section title="Log" actions={container ? <button type="button" className="btn" onClick={() => setGeneration((g) => g + 1)}>Reconnect</button> : null}>
      <ErrorNote error={error} />
      {container && text !== '' ? <pre ref={pre} className="log" tabIndex={0} aria-label="Container log" aria-live="off" data-testid="log">{text}</pre> : null}
      {!container || (text === '' && !error) ? <p className="muted" data-testid="log-status">{container ? 'No log yet.' : waiting}</p> : null}
      {note ? <p className="muted small">{note}</p> : null}
      {install !== undefined ? (
        <>
          <h3>Install output</h3>
          <pre className="log" tabIndex={0} aria-label="Install script output" data-testid="install-output">{install || '(the script wrote nothing)'}</pre>
        </>
      ) : null}
    </Section>
  );
}

function Console({ id }: { id: string }) {
  const [command, setCommand] = useState('');
  const [lines, setLines] = useState<{ command: string; response: string }[]>([]);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  return (
    <Section title="Console">
      <ol className="console" aria-label="Console output" aria-live="polite" data-testid="console-output">
        {lines.map((l, n) => <li key={n}><code>&gt; {l.command}</code><pre>{l.response}</pre></li>)}
      </ol>
      <form className="row" onSubmit={(e) => {
        e.preventDefault();
        const c = command.trim();
        if (!c) return;
        setBusy(true);
        setError(undefined);
        call('POST /instances/:id/console', { id }, { body: { command: c } }).then((r) => {
          setLines((ls) => [...ls, { command: c, response: r.via === 'stdin' ? '(sent to stdin)' : String(r.response ?? '') }].slice(-100));
          setCommand('');
        }, setError).finally(() => setBusy(false));
      }}>
        <label className="field grow"><span className="sr-only">Console command</span>
          <input value={command} onChange={(e) => setCommand(e.target.value)} placeholder="list" aria-label="Console command" autoComplete="off" />
        </label>
        <button className="btn btn-primary" type="submit" disabled={busy}>Send</button>
      </form>
      <ErrorNote error={error} />
    </Section>
  );
}

function Backups({ instance, write }: { instance: InstanceView; write: boolean }) {
  const id = instance.id as string;
  const b = useResource<Answer<'GET /instances/:id/backups'>>(`/instances/${enc(id)}/backups`, ['instance'], id);
  const [stop, setStop] = useState(false);
  const [restore, setRestore] = useState<string>();
  const list = (b.data?.backups ?? []).slice().sort((x, y) => String(y.createdAt).localeCompare(String(x.createdAt)));
  return (
    <Section title="Backups" actions={write ? (
      <div className="row wrap">
        <label className="check"><input type="checkbox" checked={stop} onChange={(e) => setStop(e.target.checked)} /> stop the server if it cannot be saved online</label>
        <ActionButton label="Take backup" variant="primary" onDone={b.reload} run={() => api('POST', `/instances/${enc(id)}/backups`, stop ? { stop: true } : {})} />
      </div>
    ) : null}>
      <ErrorNote error={b.error} />
      {b.data?.hostError ? <p className="muted">The host could not be asked: {forPeople(String(b.data.hostError))}</p> : null}
      {list.length === 0 ? <Empty>No backup yet.</Empty> : (
        <div className="table-wrap">
          <table>
            <thead><tr><th scope="col">Backup</th><th scope="col">Taken</th><th scope="col">Size</th><th scope="col">Where</th><th scope="col"><span className="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {list.map((x) => (
                <tr key={x.backupId} data-backup={x.backupId}>
                  <th scope="row"><code>{x.backupId}</code></th>
                  <td>{ago(x.createdAt)}</td>
                  <td>{bytes(x.sizeBytes)}</td>
                  <td>{[x.stored ? 'backup store' : null, x.onHost ? 'host' : null].filter(Boolean).join(', ')}</td>
                  <td className="row">
                    <a className="btn" href={`/api/v1/instances/${enc(id)}/backups/${enc(x.backupId)}/download`} download>Download</a>
                    {write ? <button type="button" className="btn" onClick={() => setRestore(x.backupId)}>Restore</button> : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <ConfirmDialog open={restore !== undefined} title={`Restore backup ${restore ?? ''}`} typed={instance.name as string} confirmLabel="Restore"
        onClose={() => setRestore(undefined)}
        onConfirm={() => api('POST', `/instances/${enc(id)}/restore`, { backupId: restore, confirm: instance.name })}>
        <p>Restoring replaces the current data of <strong>{instance.name}</strong> (a safety backup is taken first). The instance must be stopped.</p>
      </ConfirmDialog>
    </Section>
  );
}

function Settings({ instance, write }: { instance: InstanceView; write: boolean }) {
  const id = instance.id as string;
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [error, setError] = useState<unknown>();
  const [result, setResult] = useState<Answer<'PATCH /instances/:id/settings'>>();
  const settings = instance.settings;
  const pending = instance.pendingChanges;
  return (
    <Section title="Settings">
      {Object.keys(settings).length === 0 ? <Empty>No settings.</Empty> : (
        <dl className="facts">{Object.entries(settings).map(([k, v]) => <div key={k}><dt>{k}</dt><dd><code>{JSON.stringify(v)}</code></dd></div>)}</dl>
      )}
      {(instance.secretSettings as string[] | undefined)?.length ? <p className="muted small">Secrets set: {(instance.secretSettings as string[]).join(', ')}</p> : null}
      <h3>Pending changes</h3>
      {pending.length === 0 ? <Empty>None.</Empty> : (
        <ul className="list">{pending.map((p) => <li key={p.key}><code>{p.key}</code> → <code>{p.secret ? '(secret)' : JSON.stringify(p.value)}</code> <span className="muted small">{p.mode}, {ago(p.requestedAt)}</span></li>)}</ul>
      )}
      {write && pending.length > 0 ? <ActionButton label="Apply pending changes now" run={() => api('PATCH', `/instances/${enc(id)}/settings`, { applyNow: true })} /> : null}
      {write ? (
        <form className="row wrap" onSubmit={(e) => {
          e.preventDefault();
          setError(undefined);
          const v: unknown = /^-?\d+$/.test(value) ? Number(value) : value === 'true' ? true : value === 'false' ? false : value;
          call('PATCH /instances/:id/settings', { id }, { body: { settings: { [key]: v } } }).then(setResult, setError);
        }}>
          <label className="field"><span>Variable</span><input value={key} onChange={(e) => setKey(e.target.value)} required /></label>
          <label className="field"><span>Value</span><input value={value} onChange={(e) => setValue(e.target.value)} /></label>
          <button className="btn" type="submit">Change</button>
        </form>
      ) : null}
      <ErrorNote error={error} />
      {result ? <p className="muted small" role="status">Applied: {JSON.stringify(result.applied)}{result.commandId ? ' (a replacement is queued)' : ''}</p> : null}
    </Section>
  );
}

function Update({ instance }: { instance: InstanceView }) {
  const id = instance.id as string;
  const [image, setImage] = useState('');
  const [plan, setPlan] = useState<Answer<'GET /instances/:id/update-plan'>>();
  const [backup, setBackup] = useState(true);
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  return (
    <Section title="Update image">
      <form className="row wrap" onSubmit={(e) => {
        e.preventDefault();
        setError(undefined);
        setDone(undefined);
        call('GET /instances/:id/update-plan', { id }, { query: { image } }).then(setPlan, setError);
      }}>
        <label className="field grow"><span>New image</span><input value={image} onChange={(e) => { setImage(e.target.value); setPlan(undefined); }} placeholder={String(instance.image)} required /></label>
        <button className="btn" type="submit">Show the plan</button>
      </form>
      <ErrorNote error={error} />
      {plan ? (
        <>
          <Json value={plan} />
          <div className="row wrap">
            <label className="check"><input type="checkbox" checked={backup} onChange={(e) => setBackup(e.target.checked)} /> back up first</label>
            <ActionButton label="Apply the update" variant="primary" run={() => api('POST', `/instances/${enc(id)}/update`, { image, confirm: true, backup })} onDone={() => { setPlan(undefined); setDone('Update queued.'); }} />
          </div>
        </>
      ) : null}
      {done ? <p role="status">{done}</p> : null}
    </Section>
  );
}

const SCOPES: ReadonlyArray<[scope: string, label: string, typed: boolean]> = [
  ['container', 'Container', false], ['technical', 'Technical files (logs, caches)', false],
  ['player_data', 'Player data (worlds)', true], ['backups', 'Backups', true],
];

function Delete({ instance }: { instance: InstanceView }) {
  const id = instance.id as string;
  const [scopes, setScopes] = useState<string[]>(['container', 'technical']);
  const [open, setOpen] = useState(false);
  const needsName = scopes.some((s) => SCOPES.find(([x]) => x === s)?.[2]);
  return (
    <Section title="Delete">
      <fieldset className="scopes">
        <legend>What to delete</legend>
        {SCOPES.map(([s, label, typed]) => (
          <label key={s} className="check">
            <input type="checkbox" name="scope" value={s} checked={scopes.includes(s)} disabled={s === 'container'}
              onChange={(e) => setScopes(e.target.checked ? [...scopes, s] : scopes.filter((x) => x !== s))} />
            {' '}{label}{typed ? ' (needs the typed name)' : ''}
          </label>
        ))}
      </fieldset>
      <button type="button" className="btn btn-danger" onClick={() => setOpen(true)}>Delete {instance.name}…</button>
      <ConfirmDialog open={open} title={`Delete ${instance.name as string}`} {...(needsName ? { typed: instance.name as string } : {})} confirmLabel="Delete" onClose={() => setOpen(false)}
        onConfirm={async () => {
          await api('DELETE', `/instances/${enc(id)}`, { scopes, ...(needsName ? { confirm: instance.name } : {}) });
          window.location.hash = '#/instances';
        }}>
        <p>Deletes: {scopes.join(', ')}. {needsName ? 'Player data and backups cannot be recovered.' : 'Player data and backups are kept.'}</p>
      </ConfirmDialog>
    </Section>
  );
}
