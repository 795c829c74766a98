import { useState } from 'react';
import { path, type Answer } from '../api';
import { useResource } from '../live';
import { ErrorNote } from '../ui';

export function Audit() {
  const [actor, setActor] = useState('');
  const [applied, setApplied] = useState('');
  const audit = useResource<Answer<'GET /audit'>>(path('GET /audit', {}, { limit: 100, actor: applied || undefined }), [
    'instance',
    'host',
    'group',
  ]);
  const list = audit.data?.entries ?? [];
  return (
    <>
      <h1>Audit log</h1>
      <form
        className="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied(actor.trim());
        }}
      >
        <label className="field">
          <span>Actor</span>
          <input value={actor} onChange={(e) => setActor(e.target.value)} placeholder="token name" />
        </label>
        <button className="btn" type="submit">
          Filter
        </button>
        <button className="btn" type="button" onClick={audit.reload}>
          Reload
        </button>
      </form>
      <ErrorNote error={audit.error} />
      <div className="table-wrap" tabIndex={0}>
        <table>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Actor</th>
              <th scope="col">Action</th>
              <th scope="col">Target</th>
              <th scope="col">Result</th>
            </tr>
          </thead>
          <tbody>
            {list.map((e) => (
              <tr key={e.id}>
                <td>
                  <time dateTime={e.at}>{new Date(e.at).toLocaleString()}</time>
                </td>
                <td>{e.actor}</td>
                <th scope="row">{e.action}</th>
                <td>
                  {e.targetKind} {e.targetId ?? ''}
                </td>
                <td>
                  {e.result}
                  {e.errorCode ? ` (${e.errorCode})` : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}
