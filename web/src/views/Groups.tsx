import { call, canSpawn, duration, path, type Answer, type FleetInstanceView, type GroupView, type Me } from '../api';
import { useNow, useResource } from '../live';
import { ActionButton, Empty, ErrorNote, Section, StateBadge } from '../ui';

export function Groups({ me }: { me: Me }) {
  const groups = useResource<Answer<'GET /groups'>>(path('GET /groups', {}), ['group']);
  const list = groups.data?.groups ?? [];
  return (
    <>
      <h1>Groups and fleets</h1>
      <ErrorNote error={groups.error} />
      {list.length === 0 && !groups.loading ? <Empty>No group yet (ectl apply examples/network.yml).</Empty> : null}
      {list.map((g) => (
        <GroupCard key={g.id} group={g} me={me} />
      ))}
    </>
  );
}

function GroupCard({ group, me }: { group: GroupView; me: Me }) {
  const fleet = useResource<Answer<'GET /groups/:id/fleet'>>(path('GET /groups/:id/fleet', { id: group.id }), [
    'instance',
    'group',
    'players',
  ]);
  const f = fleet.data;
  const s = group.scaling;
  // Spawn and despawn need the same scope (spawn:<group>, spawn:* or an operator's), as the API checks.
  const fleetOps = canSpawn(me, group.id);
  const despawns = fleetOps && group.kind === 'ephemeral';
  return (
    <Section
      title={`${group.id} (${group.kind})`}
      id={`group-${group.id}`}
      actions={
        fleetOps && group.kind === 'ephemeral' ? (
          <ActionButton
            label="Spawn"
            variant="primary"
            onDone={fleet.reload}
            run={() => call('POST /groups/:id/spawn', { id: group.id }, { body: {} })}
          />
        ) : null
      }
    >
      <ErrorNote error={fleet.error} />
      <dl className="facts">
        <div>
          <dt>Variants</dt>
          <dd>{group.variants.map((v) => `${v.id} → ${v.template.name}@${v.template.version}`).join(', ')}</dd>
        </div>
        {s ? (
          <div>
            <dt>Min / max</dt>
            <dd>
              {s.minInstances} / {s.maxInstances ?? '∞'}
            </dd>
          </div>
        ) : null}
        {f ? (
          <div>
            <dt>Buffer</dt>
            <dd>
              {f.buffer.ready} ready + {f.buffer.starting} starting of {f.buffer.target}
            </dd>
          </div>
        ) : null}
        {f ? (
          <div>
            <dt>Allocated</dt>
            <dd>{f.counts.allocated ?? 0}</dd>
          </div>
        ) : null}
        {f ? (
          <div>
            <dt>Sleeps when empty</dt>
            <dd>
              {sleepText(f.idleTiers)} ({f.idleTiersFrom === 'group' ? "the group's setting" : "the system's default"})
            </dd>
          </div>
        ) : null}
      </dl>
      {f && f.instances.length > 0 ? (
        <div className="table-wrap" tabIndex={0}>
          <table>
            <thead>
              <tr>
                <th scope="col">Instance</th>
                <th scope="col">State</th>
                <th scope="col">Class</th>
                <th scope="col">Players</th>
                <th scope="col">Sleeps when empty</th>
                <th scope="col">Waiting for</th>
                {despawns ? (
                  <th scope="col">
                    <span className="sr-only">Actions</span>
                  </th>
                ) : null}
              </tr>
            </thead>
            <tbody>
              {f.instances.map((i) => (
                <tr key={i.id} data-fleet-instance={i.name}>
                  <th scope="row">
                    <a href={`#/instances/${i.id}`}>{i.name}</a>
                  </th>
                  <td>
                    <StateBadge state={i.state} />
                  </td>
                  <td data-testid="fleet-class">{classText(i)}</td>
                  <td>{i.class === 'archived' ? '–' : `${String(i.playersOnline)}${i.maxPlayers ? ` / ${String(i.maxPlayers)}` : ''}`}</td>
                  <td>
                    {sleepText(i.idleTiers)}
                    {i.idleTiersFrom === 'instance' ? " (this server's own setting)" : ''}
                  </td>
                  <td>
                    <NextTier next={i.next} awakeBecause={i.awakeBecause} />
                  </td>
                  {despawns ? (
                    <td>
                      {i.class !== 'archived' ? (
                        <ActionButton
                          label="Despawn"
                          onDone={fleet.reload}
                          run={() => call('POST /instances/:id/despawn', { id: i.id }, { body: {} })}
                        />
                      ) : null}
                    </td>
                  ) : null}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <Empty>No instance in this group.</Empty>
      )}
    </Section>
  );
}

/** The class once ("allocated", not "allocated (allocated)"), then what else holds (draining). */
function classText(i: FleetInstanceView): string {
  const base = i.class;
  const extra = [i.allocated && base !== 'allocated' ? 'allocated' : null, i.draining && base !== 'draining' ? 'draining' : null].filter(
    Boolean,
  );
  return extra.length ? `${base} (${extra.join(', ')})` : base;
}

const VERB: Record<string, string> = { pause: 'pauses', stop: 'stops', archive: 'is archived' };

/** `10m:pause,6h:stop` for people: "pause after 10m → stop after 6h", or "never". */
function sleepText(tiers: string): string {
  if (tiers === 'off') return 'never';
  return tiers
    .split(',')
    .map((t) => {
      const [after, action] = t.split(':');
      return `${action} after ${after}`;
    })
    .join(' → ');
}

/** The tier the provisioner fires next, counting down from its due time (the view's `dueAt`), every second. */
function NextTier({ next, awakeBecause }: { next: FleetInstanceView['next']; awakeBecause: string | null }) {
  const now = useNow();
  if (!next) return <>{awakeBecause ? `awake: ${awakeBecause}` : '–'}</>;
  const left = Math.max(0, Math.round((Date.parse(next.dueAt) - now) / 1000));
  const verb = VERB[next.action] ?? `${next.action}s`;
  return (
    <>
      {left === 0 ? `${verb} now` : `${verb} in ${duration(left)}`}
      {next.tier ? ` (tier ${next.tier})` : ''}
    </>
  );
}
