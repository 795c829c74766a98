import { forPeople, path, type Answer } from '../api';
import { useResource } from '../live';
import { ErrorNote, Section, StateBadge } from '../ui';

function countBy<T>(items: readonly T[], key: (item: T) => string): [string, number][] {
  const m = new Map<string, number>();
  for (const i of items) m.set(key(i), (m.get(key(i)) ?? 0) + 1);
  return [...m].sort((a, b) => a[0].localeCompare(b[0]));
}

const FAILED = ['error', 'intervention_required', 'unknown'];

export function Overview() {
  const hosts = useResource<Answer<'GET /hosts'>>(path('GET /hosts', {}), ['host']);
  const instances = useResource<Answer<'GET /instances'>>(path('GET /instances', {}), ['instance', 'players']);
  const list = instances.data?.instances ?? [];
  const players = list.reduce((n, i) => n + (i.players?.online ?? 0), 0);
  const failures = list.filter((i) => FAILED.includes(i.state)).sort((a, b) => b.stateChangedAt.localeCompare(a.stateChangedAt));
  return (
    <>
      <h1>Overview</h1>
      <ErrorNote error={hosts.error ?? instances.error} />
      <div className="grid">
        <Section title="Hosts by status">
          <ul className="stats">
            {countBy(hosts.data?.hosts ?? [], (h) => h.status).map(([s, n]) => (
              <li key={s}>
                <StateBadge state={s} /> <strong>{n}</strong>
              </li>
            ))}
          </ul>
        </Section>
        <Section title="Instances by state">
          <ul className="stats">
            {countBy(list, (i) => i.state).map(([s, n]) => (
              <li key={s}>
                <StateBadge state={s} /> <strong>{n}</strong>
              </li>
            ))}
          </ul>
        </Section>
        <Section title="Players online now">
          <p className="big" data-testid="players-online">
            {players}
          </p>
        </Section>
      </div>
      <Section title="Recent failures">
        {failures.length === 0 ? (
          <p className="muted">No instance is failing.</p>
        ) : (
          <ul className="list">
            {failures.slice(0, 10).map((i) => (
              <li key={i.id}>
                <a href={`#/instances/${i.id}`}>{i.name}</a> <StateBadge state={i.state} />{' '}
                <span className="muted">{i.stateReason ? forPeople(i.stateReason) : null}</span>
              </li>
            ))}
          </ul>
        )}
      </Section>
    </>
  );
}
