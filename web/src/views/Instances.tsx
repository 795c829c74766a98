import { useState } from 'react';
import { call, can, path, type Answer, type BodyOf, type Me } from '../api';
import { useResource } from '../live';
import { Empty, ErrorNote, Json, Section, StateBadge } from '../ui';

export function Instances({ me }: { me: Me }) {
  const instances = useResource<Answer<'GET /instances'>>(path('GET /instances', {}), ['instance', 'players']);
  const list = instances.data?.instances ?? [];
  return (
    <>
      <h1>Instances</h1>
      {can(me, 'instances') ? <CreateInstance /> : null}
      <ErrorNote error={instances.error} />
      {list.length === 0 && !instances.loading ? <Empty>No instance yet.</Empty> : null}
      {list.length > 0 ? (
        <div className="table-wrap">
          <table>
            <thead><tr><th scope="col">Name</th><th scope="col">State</th><th scope="col">Group</th><th scope="col">Host</th><th scope="col">Players</th><th scope="col">Endpoint</th></tr></thead>
            <tbody>
              {list.map((i) => (
                <tr key={i.id} data-instance={i.name}>
                  <th scope="row"><a href={`#/instances/${i.id}`}>{i.name}</a></th>
                  <td><StateBadge state={i.state} /></td>
                  <td>{i.groupId} / {i.variantId}</td>
                  <td>{i.hostId ?? '–'}</td>
                  <td>{i.players ? `${i.players.online} / ${i.players.max}` : '–'}</td>
                  <td>{i.endpoint && i.state !== 'archived' ? `${i.endpoint.host}:${i.endpoint.port}` : '–'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </>
  );
}

/** Create: choose group and variant, name, settings; the preview (POST /instances/preview) comes first. */
function CreateInstance() {
  const groups = useResource<Answer<'GET /groups'>>(path('GET /groups', {}), ['group']);
  const [groupId, setGroupId] = useState('');
  const [variantId, setVariantId] = useState('');
  const [name, setName] = useState('');
  const [settings, setSettings] = useState('');
  const [preview, setPreview] = useState<Answer<'POST /instances/preview'>>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const list = groups.data?.groups ?? [];
  const group = list.find((g) => g.id === groupId);
  const variants = group?.variants ?? [];
  const body = (): BodyOf<'POST /instances'> => {
    const parsed: Record<string, string | number | boolean> = {};
    for (const line of settings.split('\n').map((l) => l.trim()).filter(Boolean)) {
      const eq = line.indexOf('=');
      if (eq < 1) throw new Error(`settings: "${line}" is not KEY=VALUE`);
      const raw = line.slice(eq + 1);
      parsed[line.slice(0, eq)] = /^-?\d+$/.test(raw) ? Number(raw) : raw === 'true' ? true : raw === 'false' ? false : raw;
    }
    return { groupId, variantId: variantId || (variants[0]?.id ?? ''), ...(name ? { name } : {}), ...(Object.keys(parsed).length ? { settings: parsed } : {}) };
  };
  const run = (fn: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    fn().catch(setError).finally(() => setBusy(false));
  };
  return (
    <Section title="Create an instance">
      <form className="form-grid" onSubmit={(e) => {
        e.preventDefault();
        run(async () => setPreview(await call('POST /instances/preview', {}, { body: body() })));
      }}>
        <label className="field"><span>Group</span>
          <select value={groupId} onChange={(e) => { setGroupId(e.target.value); setVariantId(''); setPreview(undefined); }} required>
            <option value="">Choose a group…</option>
            {list.map((g) => <option key={g.id} value={g.id}>{g.id} ({g.kind})</option>)}
          </select>
        </label>
        <label className="field"><span>Variant</span>
          <select value={variantId || variants[0]?.id || ''} onChange={(e) => { setVariantId(e.target.value); setPreview(undefined); }} disabled={!group}>
            {variants.map((v) => <option key={v.id} value={v.id}>{v.id} ({v.template.name}@{v.template.version})</option>)}
          </select>
        </label>
        <label className="field"><span>Name (optional)</span>
          <input value={name} onChange={(e) => { setName(e.target.value); setPreview(undefined); }} pattern="[A-Za-z0-9][A-Za-z0-9_.\-]*" />
        </label>
        <label className="field wide"><span>Settings (KEY=VALUE, one a line; optional)</span>
          <textarea rows={2} value={settings} onChange={(e) => { setSettings(e.target.value); setPreview(undefined); }} />
        </label>
        <div className="row wide">
          <button className="btn" type="submit" disabled={busy || !group}>Preview</button>
          {preview ? (
            <button className="btn btn-primary" type="button" disabled={busy} onClick={() => run(async () => {
              const created = await call('POST /instances', {}, { body: body() });
              window.location.hash = `#/instances/${created.id}`;
            })}>Create</button>
          ) : null}
        </div>
      </form>
      <ErrorNote error={error} />
      {preview ? (
        <div className="preview" aria-label="Deployment preview">
          <h3>Preview</h3>
          <Json value={preview} />
        </div>
      ) : null}
    </Section>
  );
}
