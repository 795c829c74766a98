import { useState } from 'react';
import { ago, call, can, forPeople, path, type Answer, type HostView, type Me } from '../api';
import { useNow, useResource } from '../live';
import { ActionButton, Empty, ErrorNote, StateBadge } from '../ui';

export function Hosts({ me }: { me: Me }) {
  const hosts = useResource<Answer<'GET /hosts'>>(path('GET /hosts', {}), ['host', 'instance']);
  const list = hosts.data?.hosts ?? [];
  // Heartbeat ages move on their own between events (a heartbeat is no change event).
  const now = useNow();
  return (
    <>
      <h1>Hosts</h1>
      <ErrorNote error={hosts.error} />
      {list.length === 0 && !hosts.loading ? <Empty>No host has sent a heartbeat yet.</Empty> : null}
      <div className="table-wrap" tabIndex={0}>
        <table>
          <thead>
            <tr>
              <th scope="col">Host</th>
              <th scope="col">Status</th>
              <th scope="col">Memory reserved / total</th>
              <th scope="col">Instances</th>
              <th scope="col">Heartbeat</th>
              <th scope="col">Maintenance</th>
            </tr>
          </thead>
          <tbody>
            {list.map((h) => (
              <tr key={h.id}>
                <th scope="row">
                  {h.id}
                  <div className="muted small">
                    {h.gameAddress} · v{h.version}
                  </div>
                </th>
                <td>
                  <StateBadge state={h.status} />
                  {h.statusReason ? <div className="muted small">{forPeople(h.statusReason)}</div> : null}
                </td>
                <td data-testid={`memory-${h.id}`}>
                  {mib(h.memoryReservedMb)} / {mib(h.resources.memoryMb)}
                </td>
                <td>{h.instances.total}</td>
                <td data-testid={`heartbeat-${h.id}`}>{ago(h.lastHeartbeatAt, now)}</td>
                <td>
                  <Maintenance host={h} editable={can(me, 'hosts')} onChange={hosts.reload} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </>
  );
}

/** The host view's memory figures are MiB (`memoryReservedMb`, `resources.memoryMb`: what may be reserved for instances). */
function mib(n: number): string {
  return n >= 1024 ? `${(n / 1024).toFixed(1)} GiB` : `${n} MiB`;
}

function Maintenance({ host, editable, onChange }: { host: HostView; editable: boolean; onChange: () => void }) {
  const on = host.maintenance?.enabled === true;
  const [message, setMessage] = useState<string>(host.maintenance?.message ?? '');
  if (!editable) return <span>{on ? `on: ${host.maintenance?.message || '(no message)'}` : 'off'}</span>;
  return (
    <div className="stack">
      <label className="field inline">
        <span className="sr-only">Maintenance message for {host.id}</span>
        <input
          value={message}
          placeholder="message (optional)"
          onChange={(e) => setMessage(e.target.value)}
          aria-label={`Maintenance message for ${host.id}`}
          disabled={on}
        />
      </label>
      <ActionButton
        label={on ? 'End maintenance' : 'Start maintenance'}
        onDone={onChange}
        run={() => call('POST /hosts/:id/maintenance', { id: host.id }, { body: on ? { enabled: false } : { enabled: true, message } })}
      />
    </div>
  );
}
