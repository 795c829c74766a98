// The Files tab: browse the instance's directory (GET /instances/:id/files),
// edit text files (CodeMirror, loaded on demand), upload by button or drag and
// drop (a streamed PUT of the raw file), download, new folder, rename/move,
// delete (confirmed), archive and extract. The API: /work/API-FILES.md "Files"
// (docs/panel.md); the server checks every path.

import { lazy, Suspense, useState, type DragEvent } from 'react';
import { api, ApiError, bytes, CSRF, enc } from '../../api';
import { useResource } from '../../live';
import type { FileEntry, FileList } from '../../types';
import { ConfirmDialog, Empty, ErrorNote, Section } from '../../ui';

const FileEditor = lazy(() => import('./Editor'));

/** Larger files are downloaded, not opened in the editor. */
const EDIT_MAX_BYTES = 2 * 1024 * 1024;
const ARCHIVE = /\.(tar|tar\.gz|tgz|zip)$/i;

function join(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

function parentOf(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

const contentUrl = (id: string, path: string) => `/api/v1/instances/${enc(id)}/files/content?path=${enc(path)}`;

/** A raw body PUT (the browser streams a File): the upload and the editor's save. */
async function putContent(id: string, path: string, body: Blob | string): Promise<void> {
  const res = await fetch(contentUrl(id, path), {
    method: 'PUT',
    credentials: 'same-origin',
    headers: { ...CSRF, 'content-type': 'application/octet-stream' },
    body,
  });
  if (!res.ok) {
    const err = (await res.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
    throw new ApiError(res.status, err.error?.code ?? `HTTP_${res.status}`, err.error?.message ?? res.statusText);
  }
}

export function FilesTab({ id, write }: { id: string; write: boolean }) {
  const [dir, setDir] = useState('/');
  const list = useResource<FileList>(`/instances/${enc(id)}/files?path=${enc(dir)}`, []);
  const [selected, setSelected] = useState<string[]>([]);
  const [error, setError] = useState<unknown>();
  const [status, setStatus] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [renaming, setRenaming] = useState<string>();
  const [newName, setNewName] = useState('');
  const [folder, setFolder] = useState('');
  const [deleting, setDeleting] = useState<string[]>();
  const [editing, setEditing] = useState<{ path: string; text: string }>();
  const [dragging, setDragging] = useState(false);
  const entries = list.data?.entries ?? [];
  const open = (path: string) => {
    setDir(path);
    setSelected([]);
    setRenaming(undefined);
    setStatus(undefined);
    setError(undefined);
  };
  const run = (what: string, fn: () => Promise<string | void>) => {
    setBusy(true);
    setError(undefined);
    setStatus(`${what}…`);
    fn()
      .then(
        (done) => {
          setStatus(done ?? undefined);
          list.reload();
        },
        (err: unknown) => {
          setStatus(undefined);
          setError(err);
        },
      )
      .finally(() => setBusy(false));
  };
  const upload = (files: readonly File[]) =>
    run(`Uploading ${files.map((f) => f.name).join(', ')}`, async () => {
      for (const f of files) await putContent(id, join(dir, f.name), f);
      return `Uploaded ${files.map((f) => `${f.name} (${bytes(f.size)})`).join(', ')}.`;
    });
  const edit = (e: FileEntry) =>
    run(`Opening ${e.name}`, async () => {
      const res = await fetch(contentUrl(id, e.path), { credentials: 'same-origin', headers: CSRF });
      if (!res.ok) {
        const err = (await res.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
        throw new ApiError(res.status, err.error?.code ?? `HTTP_${res.status}`, err.error?.message ?? res.statusText);
      }
      const buf = new Uint8Array(await res.arrayBuffer());
      if (buf.includes(0)) return `${e.name} is not a text file: download it instead.`;
      setEditing({ path: e.path, text: new TextDecoder().decode(buf) });
      return undefined;
    });
  const onDrop = (e: DragEvent) => {
    e.preventDefault();
    setDragging(false);
    if (write && e.dataTransfer.files.length) upload([...e.dataTransfer.files]);
  };
  const crumbs = dir === '/' ? [] : dir.slice(1).split('/');
  return (
    <Section
      title="Files"
      actions={
        <button type="button" className="btn" onClick={list.reload}>
          Reload
        </button>
      }
    >
      <nav aria-label="Folder" className="crumbs">
        <button type="button" className="link" onClick={() => open('/')} aria-current={dir === '/' ? 'location' : undefined}>
          / (server)
        </button>
        {crumbs.map((c, n) => {
          const path = `/${crumbs.slice(0, n + 1).join('/')}`;
          return (
            <span key={path}>
              {' '}
              /{' '}
              <button type="button" className="link" onClick={() => open(path)} aria-current={path === dir ? 'location' : undefined}>
                {c}
              </button>
            </span>
          );
        })}
      </nav>
      {write ? (
        <div
          className={dragging ? 'dropzone over' : 'dropzone'}
          data-testid="dropzone"
          onDragOver={(e) => {
            e.preventDefault();
            setDragging(true);
          }}
          onDragLeave={() => setDragging(false)}
          onDrop={onDrop}
        >
          <div className="row wrap">
            <label className="btn">
              Upload files…
              <input
                type="file"
                multiple
                className="sr-only"
                aria-label="Upload files"
                onChange={(e) => {
                  if (e.target.files?.length) upload([...e.target.files]);
                  e.target.value = '';
                }}
              />
            </label>
            <form
              className="row"
              onSubmit={(e) => {
                e.preventDefault();
                const name = folder.trim();
                if (name)
                  run('Creating the folder', async () => {
                    await api('POST', `/instances/${enc(id)}/files/directory`, { path: join(dir, name) });
                    setFolder('');
                    return `Created ${name}/.`;
                  });
              }}
            >
              <label className="field inline">
                <span className="sr-only">New folder name</span>
                <input value={folder} onChange={(e) => setFolder(e.target.value)} placeholder="new folder" aria-label="New folder name" />
              </label>
              <button type="submit" className="btn" disabled={busy || folder.trim() === ''}>
                New folder
              </button>
            </form>
            <button
              type="button"
              className="btn"
              disabled={busy || selected.length === 0}
              onClick={() =>
                run('Archiving', async () => {
                  const r = await api<{ path: string; size: number }>('POST', `/instances/${enc(id)}/files/archive`, {
                    paths: selected,
                    destination: join(
                      dir,
                      `archive-${new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)}.tar.gz`,
                    ),
                  });
                  setSelected([]);
                  return `Archived into ${r.path} (${bytes(r.size)}).`;
                })
              }
            >
              Archive selected
            </button>
            <button type="button" className="btn btn-danger" disabled={busy || selected.length === 0} onClick={() => setDeleting(selected)}>
              Delete selected
            </button>
          </div>
          <p className="muted small">Or drop files here to upload them into this folder.</p>
        </div>
      ) : null}
      <ErrorNote error={list.error ?? error} />
      {status ? (
        <p role="status" className="muted" data-testid="files-status">
          {status}
        </p>
      ) : null}
      {editing ? (
        <Suspense fallback={<p aria-busy="true">Loading the editor…</p>}>
          <FileEditor
            name={editing.path}
            initial={editing.text}
            onClose={() => setEditing(undefined)}
            onSave={(text) => {
              const p = putContent(id, editing.path, text);
              p.then(() => {
                setStatus(`Saved ${editing.path}.`);
                list.reload();
              }, setError);
              return p;
            }}
          />
        </Suspense>
      ) : null}
      {list.data && entries.length === 0 ? <Empty>This folder is empty.</Empty> : null}
      {entries.length > 0 ? (
        <div className="table-wrap" tabIndex={0}>
          <table className="files">
            <thead>
              <tr>
                {write ? (
                  <th scope="col">
                    <span className="sr-only">Select</span>
                  </th>
                ) : null}
                <th scope="col">Name</th>
                <th scope="col">Size</th>
                <th scope="col">Modified</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {dir !== '/' ? (
                <tr>
                  {write ? <td /> : null}
                  <th scope="row">
                    <button type="button" className="link" onClick={() => open(parentOf(dir))}>
                      .. (up)
                    </button>
                  </th>
                  <td />
                  <td />
                  <td />
                </tr>
              ) : null}
              {entries.map((e) => (
                <tr key={e.path} data-file={e.name}>
                  {write ? (
                    <td>
                      <input
                        type="checkbox"
                        aria-label={`Select ${e.name}`}
                        checked={selected.includes(e.path)}
                        onChange={(ev) => setSelected(ev.target.checked ? [...selected, e.path] : selected.filter((x) => x !== e.path))}
                      />
                    </td>
                  ) : null}
                  <th scope="row">
                    {renaming === e.path ? (
                      <form
                        className="row"
                        onSubmit={(ev) => {
                          ev.preventDefault();
                          const to = newName.startsWith('/') ? newName : join(dir, newName);
                          run('Renaming', async () => {
                            await api('POST', `/instances/${enc(id)}/files/rename`, { from: e.path, to });
                            setRenaming(undefined);
                            return `Moved ${e.name} to ${to}.`;
                          });
                        }}
                      >
                        <label className="field inline">
                          <span className="sr-only">New name or path for {e.name}</span>
                          <input
                            autoFocus
                            value={newName}
                            onChange={(ev) => setNewName(ev.target.value)}
                            aria-label={`New name or path for ${e.name}`}
                          />
                        </label>
                        <button type="submit" className="btn" disabled={busy}>
                          Move
                        </button>
                        <button type="button" className="btn" onClick={() => setRenaming(undefined)}>
                          Cancel
                        </button>
                      </form>
                    ) : e.type === 'directory' ? (
                      <button type="button" className="link" onClick={() => open(e.path)}>
                        {e.name}/
                      </button>
                    ) : (
                      <span>
                        {e.name}
                        {e.type === 'symlink' ? ' (link)' : ''}
                      </span>
                    )}
                  </th>
                  <td>{e.type === 'directory' ? '–' : bytes(e.size)}</td>
                  <td>
                    <time dateTime={new Date(e.modifiedAt).toISOString()}>{new Date(e.modifiedAt).toLocaleString()}</time>
                  </td>
                  <td className="row wrap">
                    {e.type === 'file' && e.size <= EDIT_MAX_BYTES ? (
                      <button
                        type="button"
                        className="btn"
                        disabled={busy}
                        onClick={() => edit(e)}
                        aria-label={`${write ? 'Edit' : 'View'} ${e.name}`}
                      >
                        {write ? 'Edit' : 'View'}
                      </button>
                    ) : null}
                    {e.type === 'file' ? (
                      <a className="btn" href={contentUrl(id, e.path)} download={e.name} aria-label={`Download ${e.name}`}>
                        Download
                      </a>
                    ) : null}
                    {write ? (
                      <button
                        type="button"
                        className="btn"
                        onClick={() => {
                          setRenaming(e.path);
                          setNewName(e.name);
                        }}
                        aria-label={`Rename or move ${e.name}`}
                      >
                        Rename
                      </button>
                    ) : null}
                    {write && e.type === 'file' && ARCHIVE.test(e.name) ? (
                      <button
                        type="button"
                        className="btn"
                        disabled={busy}
                        aria-label={`Extract ${e.name}`}
                        onClick={() =>
                          run('Extracting', async () => {
                            const r = await api<{ destination: string; entries: number }>('POST', `/instances/${enc(id)}/files/extract`, {
                              path: e.path,
                            });
                            return `Extracted ${r.entries} entries into ${r.destination}.`;
                          })
                        }
                      >
                        Extract
                      </button>
                    ) : null}
                    {write ? (
                      <button type="button" className="btn" onClick={() => setDeleting([e.path])} aria-label={`Delete ${e.name}`}>
                        Delete
                      </button>
                    ) : null}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
      <ConfirmDialog
        open={deleting !== undefined}
        title={`Delete ${deleting?.length === 1 ? deleting[0] : `${deleting?.length ?? 0} items`}`}
        confirmLabel="Delete"
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          const r = await api<{ deleted: string[] }>('POST', `/instances/${enc(id)}/files/delete`, { paths: deleting });
          setSelected([]);
          setStatus(`Deleted ${r.deleted.join(', ')}.`);
          list.reload();
        }}
      >
        <p>
          Deletes {deleting?.join(', ')} from the server's files (folders with everything in them). This cannot be undone: take a backup
          first if unsure.
        </p>
      </ConfirmDialog>
    </Section>
  );
}
