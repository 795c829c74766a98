import { useState } from 'react';
import { api, can, enc, path, type Answer, type Me } from '../api';
import { useResource } from '../live';
import { Empty, ErrorNote, Section, StateBadge } from '../ui';
import type { CreatedAnswer, GroupView, JsonValue, PreviewAnswer, TemplateView } from '../types';
import { formError, mayEdit, messageFor, textOf, typedValue, VariableField } from '../variables';

export function Instances({ me }: { me: Me }) {
  const instances = useResource<Answer<'GET /instances'>>(path('GET /instances', {}), ['instance', 'players']);
  const list = instances.data?.instances ?? [];
  return (
    <>
      <h1>Instances</h1>
      {can(me, 'instances') ? <CreateInstance me={me} /> : null}
      <ErrorNote error={instances.error} />
      {list.length === 0 && !instances.loading ? <Empty>No instance yet.</Empty> : null}
      {list.length > 0 ? (
        <div className="table-wrap" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">State</th>
                <th scope="col">Group</th>
                <th scope="col">Host</th>
                <th scope="col">Players</th>
                <th scope="col">Endpoint</th>
              </tr>
            </thead>
            <tbody>
              {list.map((i) => (
                <tr key={i.id} data-instance={i.name}>
                  <th scope="row">
                    <a href={`#/instances/${i.id}`}>{i.name}</a>
                  </th>
                  <td>
                    <StateBadge state={i.state} />
                  </td>
                  <td>
                    {i.groupId} / {i.variantId}
                  </td>
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

/** Create: group and variant, name, the template's variables as fields; the preview in words (POST /instances/preview) comes first. */
function CreateInstance({ me }: { me: Me }) {
  const groups = useResource<{ groups: GroupView[] }>('/groups', ['group']);
  const [groupId, setGroupId] = useState('');
  const [variantId, setVariantId] = useState('');
  const [name, setName] = useState('');
  const [values, setValues] = useState<Record<string, string>>({});
  const [preview, setPreview] = useState<PreviewAnswer>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const list = groups.data?.groups ?? [];
  const group = list.find((g) => g.id === groupId);
  const variant = group?.variants.find((v) => v.id === variantId) ?? group?.variants[0];
  const template = useResource<TemplateView>(
    variant ? `/templates/${enc(variant.template.name)}/versions/${enc(variant.template.version)}` : null,
    [],
  );
  const variables = (template.data?.variables ?? []).filter((v) => mayEdit(v, me.scopes));
  const body = () => {
    const settings: Record<string, JsonValue> = {};
    const secrets: Record<string, JsonValue> = {};
    for (const v of variables) {
      const text = values[v.name] ?? '';
      if (text === '') continue;
      (v.secret ? secrets : settings)[v.name] = typedValue(v, text);
    }
    return {
      groupId,
      variantId: variant?.id,
      ...(name ? { name } : {}),
      ...(Object.keys(settings).length ? { settings } : {}),
      ...(Object.keys(secrets).length ? { secrets } : {}),
    };
  };
  const run = (fn: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    fn()
      .catch(setError)
      .finally(() => setBusy(false));
  };
  const changed = () => {
    setPreview(undefined);
    setError(undefined);
  };
  const fields = ['name', 'variantId', ...variables.map((v) => `${v.secret ? 'secrets' : 'settings'}.${v.name}`)];
  return (
    <Section title="Create an instance">
      <form
        className="form-grid"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          run(async () => setPreview(await api<PreviewAnswer>('POST', '/instances/preview', body())));
        }}
      >
        <label className="field">
          <span>Group</span>
          <select
            value={groupId}
            onChange={(e) => {
              setGroupId(e.target.value);
              setVariantId('');
              setValues({});
              changed();
            }}
            required
          >
            <option value="">Choose a group…</option>
            {list.map((g) => (
              <option key={g.id} value={g.id}>
                {g.id} ({g.kind})
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Variant</span>
          <select
            value={variant?.id ?? ''}
            onChange={(e) => {
              setVariantId(e.target.value);
              setValues({});
              changed();
            }}
            disabled={!group}
          >
            {group?.variants.map((v) => (
              <option key={v.id} value={v.id}>
                {v.id} ({v.template.name}@{v.template.version})
              </option>
            ))}
          </select>
        </label>
        <div className="field">
          <label htmlFor="create-name">Name (optional)</label>
          <input
            id="create-name"
            value={name}
            onChange={(e) => {
              setName(e.target.value);
              changed();
            }}
            aria-invalid={messageFor(error, 'name') ? true : undefined}
            aria-describedby={messageFor(error, 'name') ? 'create-name-error' : undefined}
          />
          {messageFor(error, 'name') ? (
            <span id="create-name-error" className="error small" role="alert">
              {messageFor(error, 'name')}
            </span>
          ) : null}
        </div>
        {variant ? (
          <fieldset className="wide vars">
            <legend>
              Variables of {variant.template.name}@{variant.template.version}
            </legend>
            <ErrorNote error={template.error} />
            {template.data && variables.length === 0 ? <Empty>This template has no variable to fill in.</Empty> : null}
            <div className="form-grid">
              {variables.map((v) => (
                <VariableField
                  key={v.name}
                  variable={v}
                  idPrefix="create"
                  value={values[v.name] ?? ''}
                  placeholder={v.secret ? '(generated when empty)' : v.default !== undefined ? `default: ${textOf(v.default)}` : undefined}
                  onChange={(text) => {
                    setValues({ ...values, [v.name]: text });
                    changed();
                  }}
                  error={messageFor(error, `${v.secret ? 'secrets' : 'settings'}.${v.name}`)}
                />
              ))}
            </div>
          </fieldset>
        ) : null}
        <div className="row wide">
          <button className="btn" type="submit" disabled={busy || !group}>
            Preview
          </button>
          {preview?.wouldCreate ? (
            <button
              className="btn btn-primary"
              type="button"
              disabled={busy}
              onClick={() =>
                run(async () => {
                  const created = await api<CreatedAnswer>('POST', '/instances', body());
                  window.location.hash = `#/instances/${created.id}`;
                })
              }
            >
              Create
            </button>
          ) : null}
        </div>
      </form>
      <ErrorNote error={formError(error, fields)} />
      {preview ? (
        <PreviewWords
          preview={preview}
          given={variables.filter((v) => (values[v.name] ?? '') !== '').map((v) => [v.name, v.secret ? '••••' : values[v.name]!])}
        />
      ) : null}
    </Section>
  );
}

/** The preview in words: where it goes, what it gets, what will be created. */
function PreviewWords({ preview: p, given }: { preview: PreviewAnswer; given: readonly (readonly [string, string])[] }) {
  // The preview runs the create's plan: the values typed here were checked by the server's rules, the rest are the template's defaults.
  const defaults = Object.entries(p.settings).filter(([k]) => !given.some(([g]) => g === k));
  return (
    <div className="preview" aria-label="Deployment preview" role="region">
      <h3>Preview</h3>
      {p.problems.length > 0 ? (
        <ul className="error">
          {p.problems.map((x) => (
            <li key={x}>{x}</li>
          ))}
        </ul>
      ) : null}
      <ul className="words">
        <li>
          <strong>{p.name}</strong> in group <strong>{p.group.id}</strong> ({p.group.kind}), variant {p.variant}, from template{' '}
          <strong>
            {p.template.name}@{p.template.version}
          </strong>
          .
        </li>
        <li>
          Host:{' '}
          {p.placement ? (
            <>
              <strong>{p.placement.hostId}</strong> ({p.placement.memoryFreeMb} MiB free before this one)
            </>
          ) : (
            'none can take it now'
          )}
          .
        </li>
        <li>
          Port: the game listens on {p.ports.containerPort} in the container;{' '}
          {p.ports.hostPort ?? 'the public port is chosen when a host takes it'}
          {p.ports.rcon ? `; RCON on ${p.ports.rcon.port}, not published` : ''}.
        </li>
        <li>
          Memory: {p.resources.memoryMb} MiB{p.resources.cpus ? `, ${p.resources.cpus} CPUs` : ', no CPU limit'}.
        </li>
        <li>
          Image: <code>{p.image}</code>.
        </li>
        <li>
          Variables:{' '}
          {given.length ? `${given.map(([k, v]) => `${k} = ${v}`).join(', ')} as given, checked by the server's rules` : 'none given'}
          {defaults.length ? `; defaults: ${defaults.map(([k, v]) => `${k} = ${textOf(v)}`).join(', ')}` : ''}; secrets:{' '}
          {p.secrets
            .map((s) => `${s.name}${s.generatedAtCreation && !given.some(([g]) => g === s.name) ? ' (generated)' : ''}`)
            .join(', ') || 'none'}
          .
        </li>
        <li>
          Will be created: a container, a data directory ({p.dataPaths.length ? p.dataPaths.join(', ') : '/data'} kept as player data), and
          the server {p.start ? 'is started' : 'stays stopped'}.
        </li>
        <li>{p.wouldCreate ? 'Nothing has been written yet: Create does it.' : 'It would not be created as it is (see above).'}</li>
      </ul>
    </div>
  );
}
