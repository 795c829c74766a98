// Shared pieces: state badges, error notes, buttons that report their
// failures, and the typed-name confirmation dialog (native <dialog>: focus is
// trapped and Escape closes it).

import { useEffect, useRef, useState, type ReactNode } from 'react';
import { ApiError, peopleMessage } from './api';

export function StateBadge({ state }: { state: string | null | undefined }) {
  const s = state ?? 'unknown';
  const tone = ['online', 'ONLINE', 'running'].includes(s)
    ? 'ok'
    : ['error', 'intervention_required', 'OFFLINE', 'unknown', 'failed'].includes(s)
      ? 'bad'
      : ['paused', 'stopped', 'MAINTENANCE', 'deleted'].includes(s)
        ? 'idle'
        : 'busy';
  return (
    <span className={`badge badge-${tone}`} data-state={s}>
      {s.replace(/_/g, ' ')}
    </span>
  );
}

/** An error for people (api.ts peopleMessage); the stable code stays in `data-code` for tests and support. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p className="error" role="alert" data-code={error instanceof ApiError ? error.code : undefined}>
      {peopleMessage(error)}
    </p>
  );
}

export function Section({ title, children, actions, id }: { title: string; children: ReactNode; actions?: ReactNode; id?: string }) {
  const headingId = `h-${(id ?? title).replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <section className="card" aria-labelledby={headingId}>
      <div className="card-head">
        <h2 id={headingId}>{title}</h2>
        {actions ? <div className="card-actions">{actions}</div> : null}
      </div>
      {children}
    </section>
  );
}

/** A button running an async action: disabled while it runs, its error shown next to it. */
export function ActionButton({
  label,
  run,
  variant,
  disabled,
  onDone,
}: {
  label: string;
  run: () => Promise<unknown>;
  variant?: 'danger' | 'primary';
  disabled?: boolean;
  onDone?: (result: unknown) => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  return (
    <span className="action">
      <button
        type="button"
        className={variant ? `btn btn-${variant}` : 'btn'}
        disabled={busy || disabled}
        onClick={() => {
          setBusy(true);
          setError(undefined);
          run()
            .then((r) => onDone?.(r), setError)
            .finally(() => setBusy(false));
        }}
      >
        {busy ? `${label}…` : label}
      </button>
      {error ? <ErrorNote error={error} /> : null}
    </span>
  );
}

/**
 * A confirmation dialog: when `typed` is given the confirm button stays
 * disabled until the user types exactly that text.
 */
export function ConfirmDialog({
  open,
  title,
  children,
  typed,
  confirmLabel,
  onConfirm,
  onClose,
}: {
  open: boolean;
  title: string;
  children?: ReactNode;
  typed?: string;
  confirmLabel: string;
  onConfirm: () => Promise<unknown>;
  onClose: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) {
      setText('');
      setError(undefined);
      d.showModal();
    } else if (!open && d.open) d.close();
  }, [open]);
  const ok = typed === undefined || text === typed;
  return (
    <dialog ref={ref} className="dialog" aria-labelledby="dialog-title" onClose={onClose}>
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if (!ok) return;
          setBusy(true);
          setError(undefined);
          onConfirm()
            .then(() => onClose(), setError)
            .finally(() => setBusy(false));
        }}
      >
        <h2 id="dialog-title">{title}</h2>
        {children}
        {typed !== undefined ? (
          <label className="field">
            <span>
              Type <code>{typed}</code> to confirm
            </span>
            <input
              autoFocus
              value={text}
              onChange={(e) => setText(e.target.value)}
              autoComplete="off"
              spellCheck={false}
              aria-label={`Type ${typed} to confirm`}
            />
          </label>
        ) : null}
        <ErrorNote error={error} />
        <div className="row end">
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" className="btn btn-danger" disabled={!ok || busy}>
            {busy ? `${confirmLabel}…` : confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <p className="muted">{children}</p>;
}

export function Json({ value }: { value: unknown }) {
  return <pre className="json">{JSON.stringify(value, null, 2)}</pre>;
}
