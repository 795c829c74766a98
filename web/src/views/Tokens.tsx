import { useState } from 'react';
import { ago, call, path, type Answer } from '../api';
import { useResource } from '../live';
import { ActionButton, ErrorNote, Section } from '../ui';

const COMMON_SCOPES = [
  'admin',
  'manager',
  'operator',
  'read',
  'metrics',
  'router',
  'instances:request',
  'instances:read',
  'instances:write',
  'hosts:read',
  'hosts:write',
  'groups:read',
  'groups:write',
  'templates:read',
  'templates:write',
  'layers:read',
  'layers:write',
  'commands:read',
];

/** Admins only: the shell opens this section for the admin scope alone (App.tsx sectionsFor). */
export function Tokens() {
  const tokens = useResource<Answer<'GET /tokens'>>(path('GET /tokens', {}), []);
  const [name, setName] = useState('');
  const [scopes, setScopes] = useState<string[]>(['read']);
  const [extra, setExtra] = useState('');
  const [created, setCreated] = useState<Answer<'POST /tokens'>>();
  const [error, setError] = useState<unknown>();
  return (
    <>
      <h1>Tokens</h1>
      <Section title="Create a token">
        <form
          onSubmit={(e) => {
            e.preventDefault();
            setError(undefined);
            const all = [...scopes, ...extra.split(/[\s,]+/).filter(Boolean)];
            call('POST /tokens', {}, { body: { name, scopes: all } }).then((t) => {
              setCreated(t);
              setName('');
              tokens.reload();
            }, setError);
          }}
        >
          <label className="field">
            <span>Name</span>
            <input value={name} onChange={(e) => setName(e.target.value)} required />
          </label>
          <fieldset className="scopes">
            <legend>Scopes</legend>
            {COMMON_SCOPES.map((s) => (
              <label key={s} className="check">
                <input
                  type="checkbox"
                  checked={scopes.includes(s)}
                  onChange={(e) => setScopes(e.target.checked ? [...scopes, s] : scopes.filter((x) => x !== s))}
                />{' '}
                {s}
              </label>
            ))}
          </fieldset>
          <label className="field">
            <span>Other scopes (e.g. spawn:lobby), space-separated</span>
            <input value={extra} onChange={(e) => setExtra(e.target.value)} />
          </label>
          <button className="btn btn-primary" type="submit">
            Create token
          </button>
        </form>
        <ErrorNote error={error} />
        {created ? (
          <div className="secret" role="status">
            <p>
              <strong>Token {created.name} created.</strong> Copy the secret now: it is shown only once.
            </p>
            <input
              readOnly
              value={created.secret}
              aria-label="New token secret"
              data-testid="token-secret"
              onFocus={(e) => e.target.select()}
            />
            <button type="button" className="btn" onClick={() => setCreated(undefined)}>
              Done
            </button>
          </div>
        ) : null}
      </Section>
      <Section title="Tokens">
        <ErrorNote error={tokens.error} />
        <div className="table-wrap" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Scopes</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Status</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {(tokens.data?.tokens ?? []).map((t) => (
                <tr key={t.id}>
                  <th scope="row">{t.name}</th>
                  <td>{t.scopes.join(', ')}</td>
                  <td>{ago(t.createdAt)}</td>
                  <td>{ago(t.lastUsedAt)}</td>
                  <td>{t.revokedAt ? `revoked ${ago(t.revokedAt)}` : 'active'}</td>
                  <td>
                    {t.revokedAt ? null : (
                      <ActionButton
                        label={`Revoke ${t.name}`}
                        variant="danger"
                        onDone={tokens.reload}
                        run={() => call('DELETE /tokens/:id', { id: t.id })}
                      />
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </Section>
    </>
  );
}
