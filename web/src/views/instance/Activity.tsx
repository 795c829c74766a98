// The Activity tab: the state history as a timeline, the players, and (for
// an admin, who may read the audit log) this instance's audit entries.

import { ago, can, enc, forPeople, type Answer, type Me } from '../../api';
import { useResource, type Resource } from '../../live';
import type { AuditEntry, HistoryEntry } from '../../types';
import { Empty, ErrorNote, Section, StateBadge } from '../../ui';

export function Activity({ me, id, history }: { me: Me; id: string; history: Resource<{ history: HistoryEntry[] }> }) {
  return (
    <>
      <div className="grid two">
        <Timeline history={history} />
        <Players id={id} />
      </div>
      {can(me, 'admin') ? (
        <InstanceAudit id={id} />
      ) : (
        <p className="muted small">The audit entries of this server are shown to administrators.</p>
      )}
    </>
  );
}

function Timeline({ history: h }: { history: Resource<{ history: HistoryEntry[] }> }) {
  const list = h.data?.history ?? [];
  return (
    <Section title="History">
      <ErrorNote error={h.error} />
      <ol className="timeline" aria-label="State history, newest first" tabIndex={0}>
        {[...list]
          .sort((a, b) => b.at.localeCompare(a.at))
          .map((e, n) => (
            <li key={`${e.at}-${n}`}>
              <time dateTime={e.at} title={e.at}>
                {new Date(e.at).toLocaleTimeString()}
              </time>{' '}
              <span>
                {e.from ?? '∅'} → <StateBadge state={e.to} />
              </span>
              <div className="muted small">
                {forPeople(e.reason ?? '')}
                {e.actor ? ` · ${e.actor}` : ''}
              </div>
            </li>
          ))}
      </ol>
    </Section>
  );
}

/** GET /instances/:id/players. */
type PlayersAnswer = Answer<'GET /instances/:id/players'>;

function Players({ id }: { id: string }) {
  const p = useResource<PlayersAnswer>(`/instances/${enc(id)}/players`, ['players', 'instance'], id);
  const list = p.data?.players ?? [];
  return (
    <Section title="Players">
      <ErrorNote error={p.error} />
      <p>
        {p.data ? `${p.data.online} online` : '–'}
        {p.data?.probe ? ` (probe: ${p.data.probe.online} / ${p.data.probe.max})` : ''}
      </p>
      {list.length ? (
        <ul className="list">
          {list.map((pl) => (
            <li key={pl.uuid ?? pl.name}>
              {pl.name} <span className="muted small">since {ago(pl.connectedAt)}</span>
            </li>
          ))}
        </ul>
      ) : (
        <Empty>No player reported by a router.</Empty>
      )}
    </Section>
  );
}

function InstanceAudit({ id }: { id: string }) {
  const audit = useResource<{ entries: AuditEntry[] }>(`/audit?targetKind=instance&targetId=${enc(id)}&limit=100`, ['instance'], id);
  const list = audit.data?.entries ?? [];
  return (
    <Section
      title="Audit entries"
      actions={
        <button type="button" className="btn" onClick={audit.reload}>
          Reload
        </button>
      }
    >
      <ErrorNote error={audit.error} />
      {list.length === 0 && !audit.loading ? (
        <Empty>No audit entry for this server yet.</Empty>
      ) : (
        <div className="table-wrap" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Actor</th>
                <th scope="col">Action</th>
                <th scope="col">Result</th>
              </tr>
            </thead>
            <tbody>
              {list.map((e) => (
                <tr key={e.id} data-audit={e.action}>
                  <td>
                    <time dateTime={e.at}>{new Date(e.at).toLocaleString()}</time>
                  </td>
                  <td>{e.actor}</td>
                  <th scope="row">{e.action}</th>
                  <td>
                    {e.result}
                    {e.errorCode ? ` (${e.errorCode})` : ''}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Section>
  );
}
