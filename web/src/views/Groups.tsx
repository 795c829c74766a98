import { api, can, duration, enc, type Loose, type Me } from '../api';
import { useResource } from '../live';
import { ActionButton, Empty, ErrorNote, Section, StateBadge } from '../ui';

export function Groups({ me }: { me: Me }) {
  const groups = useResource<{ groups: Loose[] }>('/groups', ['group']);
  const list = groups.data?.groups ?? [];
  return (
    <>
      <h1>Groups and fleets</h1>
      <ErrorNote error={groups.error} />
      {list.length === 0 && !groups.loading ? <Empty>No group yet (ectl apply examples/network.yml).</Empty> : null}
      {list.map((g) => <GroupCard key={g.id} group={g} me={me} />)}
    </>
  );
}

function GroupCard({ group, me }: { group: Loose; me: Me }) {
  const fleet = useResource<Loose>(`/groups/${enc(group.id)}/fleet`, ['instance', 'group', 'players']);
  const f = fleet.data;
  const s = group.scaling as Loose | null;
  const fleetOps = me.scopes.some((x) => ['admin', 'manager', 'operator', 'spawn:*', `spawn:${group.id}`].includes(x));
  return (
    <Section title={`${group.id} (${group.kind})`} id={`group-${group.id}`} actions={fleetOps && group.kind === 'ephemeral' ? (
      <ActionButton label="Spawn" variant="primary" onDone={fleet.reload} run={() => api('POST', `/groups/${enc(group.id)}/spawn`, {})} />
    ) : null}>
      <ErrorNote error={fleet.error} />
      <dl className="facts">
        <div><dt>Variants</dt><dd>{(group.variants as Loose[]).map((v) => `${v.id} → ${v.template.name}@${v.template.version}`).join(', ')}</dd></div>
        {s ? <div><dt>Min / max</dt><dd>{s.minInstances ?? s.min ?? 0} / {s.maxInstances ?? s.max ?? '∞'}</dd></div> : null}
        {f ? <div><dt>Buffer</dt><dd>{f.buffer.ready} ready + {f.buffer.starting} starting of {f.buffer.target}</dd></div> : null}
        {f ? <div><dt>Allocated</dt><dd>{f.counts.allocated ?? 0}</dd></div> : null}
        {s?.idleTiers?.length ? <div><dt>Idle tiers</dt><dd>{(s.idleTiers as Loose[]).map((t) => `${t.action} after ${t.after ?? t.afterSeconds ?? JSON.stringify(t)}`).join(' → ')}</dd></div> : null}
      </dl>
      {f && (f.instances as Loose[]).length > 0 ? (
        <div className="table-wrap">
          <table>
            <thead><tr><th scope="col">Instance</th><th scope="col">State</th><th scope="col">Class</th><th scope="col">Players</th><th scope="col">Waiting for</th>{can(me, 'instances') ? <th scope="col"><span className="sr-only">Actions</span></th> : null}</tr></thead>
            <tbody>
              {(f.instances as Loose[]).map((i) => (
                <tr key={i.id}>
                  <th scope="row"><a href={`#/instances/${i.id}`}>{i.name}</a></th>
                  <td><StateBadge state={i.state} /></td>
                  <td>{i.class}{i.allocated ? ' (allocated)' : ''}{i.draining ? ' (draining)' : ''}</td>
                  <td>{i.playersOnline}{i.maxPlayers ? ` / ${i.maxPlayers}` : ''}</td>
                  <td>{i.next ? `${i.next.action === 'pause' ? 'pauses' : i.next.action === 'stop' ? 'stops' : `${i.next.action}s`} in ${duration(i.next.inSeconds)}` : '–'}</td>
                  {can(me, 'instances') ? <td>{group.kind === 'ephemeral' ? <ActionButton label="Despawn" onDone={fleet.reload} run={() => api('POST', `/instances/${enc(i.id)}/despawn`, {})} /> : null}</td> : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : <Empty>No instance in this group.</Empty>}
    </Section>
  );
}
