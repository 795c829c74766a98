import { bytes, ago, path, type Answer } from '../api';
import { useResource } from '../live';
import { Empty, ErrorNote, Section } from '../ui';

/** Templates and layers change only through ectl apply / the API (no change event): loaded on open, reloaded on demand. */
export function Templates() {
  const templates = useResource<Answer<'GET /templates'>>(path('GET /templates', {}), ['group']);
  const layers = useResource<Answer<'GET /template-layers'>>(path('GET /template-layers', {}), ['group']);
  return (
    <>
      <h1>Templates and layers</h1>
      <Section
        title="Template versions"
        actions={
          <button
            type="button"
            className="btn"
            onClick={() => {
              templates.reload();
              layers.reload();
            }}
          >
            Reload
          </button>
        }
      >
        <ErrorNote error={templates.error} />
        {(templates.data?.templates ?? []).length === 0 ? (
          <Empty>No template yet.</Empty>
        ) : (
          <div className="table-wrap" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Template</th>
                  <th scope="col">Image</th>
                  <th scope="col">Memory</th>
                  <th scope="col">Readiness</th>
                  <th scope="col">Layers</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {(templates.data?.templates ?? []).map((t) => (
                  <tr key={`${t.name}@${t.version}`}>
                    <th scope="row">
                      {t.name}@{t.version}
                    </th>
                    <td>
                      <code>{t.image}</code>
                    </td>
                    <td>{t.resources.memoryMb} MiB</td>
                    <td>{t.readiness?.kind ?? '–'}</td>
                    <td>{(t.layers ?? []).map((l) => l.id).join(', ') || '–'}</td>
                    <td>{ago(t.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Section>
      <Section title="Layers">
        <ErrorNote error={layers.error} />
        {(layers.data?.layers ?? []).length === 0 ? (
          <Empty>No layer yet.</Empty>
        ) : (
          <div className="table-wrap" tabIndex={0}>
            <table>
              <thead>
                <tr>
                  <th scope="col">Layer</th>
                  <th scope="col">Checksum</th>
                  <th scope="col">Size</th>
                  <th scope="col">Pushed</th>
                </tr>
              </thead>
              <tbody>
                {(layers.data?.layers ?? []).map((l) => (
                  <tr key={`${l.id}-${l.checksum}`}>
                    <th scope="row">{l.id}</th>
                    <td>
                      <code>{l.checksum.slice(0, 19)}…</code>
                    </td>
                    <td>{bytes(l.sizeBytes)}</td>
                    <td>{ago(l.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </Section>
    </>
  );
}
