// The Backups and Settings tabs: backups (take, download, restore with the
// typed name), the instance's settings and pending changes, the image update,
// Reinstall, and deletion with scopes.

import { useState } from 'react';
import { ago, api, bytes, enc, forPeople, type Answer } from '../../api';
import { useResource } from '../../live';
import type { InstanceView, JsonValue } from '../../types';
import { ActionButton, ConfirmDialog, Empty, ErrorNote, Json, Section } from '../../ui';

export function Backups({ instance, write }: { instance: InstanceView; write: boolean }) {
  const id = instance.id;
  const b = useResource<Answer<'GET /instances/:id/backups'>>(`/instances/${enc(id)}/backups`, ['instance'], id);
  const [stop, setStop] = useState(false);
  const [restore, setRestore] = useState<string>();
  const list = (b.data?.backups ?? []).slice().sort((x, y) => y.createdAt.localeCompare(x.createdAt));
  return (
    <Section
      title="Backups"
      actions={
        write ? (
          <div className="row wrap">
            <label className="check">
              <input type="checkbox" checked={stop} onChange={(e) => setStop(e.target.checked)} /> stop the server if it cannot be saved
              online
            </label>
            <ActionButton
              label="Take backup"
              variant="primary"
              onDone={b.reload}
              run={() => api('POST', `/instances/${enc(id)}/backups`, stop ? { stop: true } : {})}
            />
          </div>
        ) : null
      }
    >
      <ErrorNote error={b.error} />
      {b.data?.hostError ? <p className="muted">The host could not be asked: {forPeople(b.data.hostError)}</p> : null}
      {list.length === 0 ? (
        <Empty>No backup yet.</Empty>
      ) : (
        <div className="table-wrap" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">Backup</th>
                <th scope="col">Taken</th>
                <th scope="col">Size</th>
                <th scope="col">Where</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {list.map((x) => (
                <tr key={x.backupId} data-backup={x.backupId}>
                  <th scope="row">
                    <code>{x.backupId}</code>
                  </th>
                  <td>{ago(x.createdAt)}</td>
                  <td>{bytes(x.sizeBytes)}</td>
                  <td>{[x.stored ? 'backup store' : null, x.onHost ? 'host' : null].filter(Boolean).join(', ')}</td>
                  <td className="row">
                    <a className="btn" href={`/api/v1/instances/${enc(id)}/backups/${enc(x.backupId)}/download`} download>
                      Download
                    </a>
                    {write ? (
                      <button type="button" className="btn" onClick={() => setRestore(x.backupId)}>
                        Restore
                      </button>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {/* Only a writer can open it: a read-only token never gets the typed-confirmation form in the page. */}
      {write ? (
        <ConfirmDialog
          open={restore !== undefined}
          title={`Restore backup ${restore ?? ''}`}
          typed={instance.name}
          confirmLabel="Restore"
          onClose={() => setRestore(undefined)}
          onConfirm={() => api('POST', `/instances/${enc(id)}/restore`, { backupId: restore, confirm: instance.name })}
        >
          <p>
            Restoring replaces the current data of <strong>{instance.name}</strong> (a safety backup is taken first). The instance must be
            stopped.
          </p>
        </ConfirmDialog>
      ) : null}
    </Section>
  );
}

/** PATCH /instances/:id/settings → what was applied at once, and the replacement it queued. */
type SettingsAnswer = Answer<'PATCH /instances/:id/settings'>;

/** The instance's settings and pending changes, and a free change of one variable (the Startup tab has the form per variable). */
export function Settings({ instance, write }: { instance: InstanceView; write: boolean }) {
  const id = instance.id;
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [error, setError] = useState<unknown>();
  const [result, setResult] = useState<SettingsAnswer>();
  const settings = instance.settings;
  const pending = instance.pendingChanges;
  return (
    <Section title="Settings">
      {Object.keys(settings).length === 0 ? (
        <Empty>No settings.</Empty>
      ) : (
        <dl className="facts">
          {Object.entries(settings).map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>
                <code>{JSON.stringify(v)}</code>
              </dd>
            </div>
          ))}
        </dl>
      )}
      {instance.secretSettings.length ? <p className="muted small">Secrets set: {instance.secretSettings.join(', ')}</p> : null}
      <h3>Pending changes</h3>
      {pending.length === 0 ? (
        <Empty>None.</Empty>
      ) : (
        <ul className="list">
          {pending.map((p) => (
            <li key={p.key}>
              <code>{p.key}</code> → <code>{p.secret ? '(secret)' : p.hidden ? '(hidden)' : JSON.stringify(p.value)}</code>{' '}
              <span className="muted small">
                {p.mode}, {ago(p.requestedAt)}
              </span>
            </li>
          ))}
        </ul>
      )}
      {write && pending.length > 0 ? (
        <ActionButton label="Apply pending changes now" run={() => api('PATCH', `/instances/${enc(id)}/settings`, { applyNow: true })} />
      ) : null}
      {write ? (
        <form
          className="row wrap"
          onSubmit={(e) => {
            e.preventDefault();
            setError(undefined);
            const v: JsonValue = /^-?\d+$/.test(value) ? Number(value) : value === 'true' ? true : value === 'false' ? false : value;
            api<SettingsAnswer>('PATCH', `/instances/${enc(id)}/settings`, { settings: { [key]: v } }).then(setResult, setError);
          }}
        >
          <label className="field">
            <span>Variable</span>
            <input value={key} onChange={(e) => setKey(e.target.value)} required />
          </label>
          <label className="field">
            <span>Value</span>
            <input value={value} onChange={(e) => setValue(e.target.value)} />
          </label>
          <button className="btn" type="submit">
            Change
          </button>
        </form>
      ) : null}
      <ErrorNote error={error} />
      {result ? (
        <p className="muted small" role="status">
          Applied: {JSON.stringify(result.applied)}
          {result.commandId ? ' (a replacement is queued)' : ''}
        </p>
      ) : null}
    </Section>
  );
}

/** GET /instances/:id/update-plan (shown as it is). */
type UpdatePlan = Record<string, JsonValue>;

/** The image update: the plan first, then applied with confirm. `initial`: an image chosen elsewhere (the Startup tab's choice). */
export function Update({ instance, initial = '' }: { instance: InstanceView; initial?: string }) {
  const id = instance.id;
  const [image, setImage] = useState(initial);
  const [plan, setPlan] = useState<UpdatePlan>();
  const [backup, setBackup] = useState(true);
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  return (
    <Section title="Update image">
      <form
        className="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          setError(undefined);
          setDone(undefined);
          api<UpdatePlan>('GET', `/instances/${enc(id)}/update-plan?image=${enc(image)}`).then(setPlan, setError);
        }}
      >
        <label className="field grow">
          <span>New image</span>
          <input
            value={image}
            onChange={(e) => {
              setImage(e.target.value);
              setPlan(undefined);
            }}
            placeholder={instance.image}
            required
          />
        </label>
        <button className="btn" type="submit">
          Show the plan
        </button>
      </form>
      <ErrorNote error={error} />
      {plan ? (
        <>
          <Json value={plan} />
          <div className="row wrap">
            <label className="check">
              <input type="checkbox" checked={backup} onChange={(e) => setBackup(e.target.checked)} /> back up first
            </label>
            <ActionButton
              label="Apply the update"
              variant="primary"
              run={() => api('POST', `/instances/${enc(id)}/update`, { image, confirm: true, backup })}
              onDone={() => {
                setPlan(undefined);
                setDone('Update queued.');
              }}
            />
          </div>
        </>
      ) : null}
      {done ? <p role="status">{done}</p> : null}
    </Section>
  );
}

/** POST /instances/:id/reinstall: runs the template's install script again (the route's own refusal is shown as it comes). */
export function Reinstall({ instance }: { instance: InstanceView }) {
  const [open, setOpen] = useState(false);
  const [done, setDone] = useState(false);
  return (
    <Section title="Reinstall">
      <p className="muted">Runs the template's install script again on this server's files. The server is stopped while it runs.</p>
      <button
        type="button"
        className="btn"
        onClick={() => {
          setDone(false);
          setOpen(true);
        }}
      >
        Reinstall {instance.name}…
      </button>
      {done ? <p role="status">Reinstall queued.</p> : null}
      <ConfirmDialog
        open={open}
        title={`Reinstall ${instance.name}`}
        typed={instance.name}
        confirmLabel="Reinstall"
        onClose={() => setOpen(false)}
        onConfirm={async () => {
          await api('POST', `/instances/${enc(instance.id)}/reinstall`, {});
          setDone(true);
        }}
      >
        <p>
          The install script runs again on the data of <strong>{instance.name}</strong>; files it writes are replaced.
        </p>
      </ConfirmDialog>
    </Section>
  );
}

const SCOPES: ReadonlyArray<[scope: string, label: string, typed: boolean]> = [
  ['container', 'Container', false],
  ['technical', 'Technical files (logs, caches)', false],
  ['player_data', 'Player data (worlds)', true],
  ['backups', 'Backups', true],
];

export function Delete({ instance }: { instance: InstanceView }) {
  const id = instance.id;
  const [scopes, setScopes] = useState<string[]>(['container', 'technical']);
  const [open, setOpen] = useState(false);
  const needsName = scopes.some((s) => SCOPES.find(([x]) => x === s)?.[2]);
  return (
    <Section title="Delete">
      <fieldset className="scopes">
        <legend>What to delete</legend>
        {SCOPES.map(([s, label, typed]) => (
          <label key={s} className="check">
            <input
              type="checkbox"
              name="scope"
              value={s}
              checked={scopes.includes(s)}
              disabled={s === 'container'}
              onChange={(e) => setScopes(e.target.checked ? [...scopes, s] : scopes.filter((x) => x !== s))}
            />{' '}
            {label}
            {typed ? ' (needs the typed name)' : ''}
          </label>
        ))}
      </fieldset>
      <button type="button" className="btn btn-danger" onClick={() => setOpen(true)}>
        Delete {instance.name}…
      </button>
      <ConfirmDialog
        open={open}
        title={`Delete ${instance.name}`}
        {...(needsName ? { typed: instance.name } : {})}
        confirmLabel="Delete"
        onClose={() => setOpen(false)}
        onConfirm={async () => {
          await api('DELETE', `/instances/${enc(id)}`, { scopes, ...(needsName ? { confirm: instance.name } : {}) });
          window.location.hash = '#/instances';
        }}
      >
        <p>
          Deletes: {scopes.join(', ')}. {needsName ? 'Player data and backups cannot be recovered.' : 'Player data and backups are kept.'}
        </p>
      </ConfirmDialog>
    </Section>
  );
}
