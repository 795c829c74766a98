// The Console tab: the server's log and the command line in one terminal-like
// pane (RCON or stdin, whichever the template has: POST /instances/:id/console),
// command history with ↑/↓, and the live resource graphs. The log pane keeps
// what it showed across a container replacement (the API's log route reads
// only the current container, and names it in a header), with a marker line
// where the new one begins; it follows the new container without a reload.

import { useEffect, useRef, useState, type KeyboardEvent } from 'react';
import { LOG_CONTAINER_HEADER } from '../../../../orchestrator/src/contracts/public-api/panel-rules.js';
import { api, ApiError, CSRF, enc } from '../../api';
import type { ConsoleAnswer, HistoryEntry, InstanceView } from '../../types';
import { ErrorNote, Section } from '../../ui';
import { StatsCharts } from './Charts';

const LOG_TAIL = 200;
const LOG_MAX_CHARS = 200_000;
const HISTORY_MAX = 50;
/** States without a container (yet, or any more): no log to read. */
const NO_CONTAINER: readonly string[] = ['draft', 'installing', 'archived'];
const RUNNING: readonly string[] = ['starting', 'online', 'degraded'];

/** One stretch of the pane: container output, a command with its answer, or a marker line. */
type Segment = { kind: 'log'; text: string } | { kind: 'command'; command: string; response: string } | { kind: 'mark'; text: string };

/** The install script's last lines, as the history keeps them (`… install script … last lines:\n…`), newest first. */
function installOutput(history: readonly HistoryEntry[]): string | undefined {
  const hit = [...history]
    .sort((a, b) => b.at.localeCompare(a.at))
    .map((e) => /install script[^\n]*last lines:\n([\s\S]*)$/.exec(e.reason ?? '')?.[1])
    .find((text) => text !== undefined);
  return hit?.trimEnd();
}

/** The last non-empty line of the log text shown so far. */
function lastLine(segments: readonly Segment[]): string | undefined {
  const text = segments
    .filter((s) => s.kind === 'log')
    .map((s) => (s as { text: string }).text)
    .join('');
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .at(-1);
}

export function ConsoleTab({ instance, history, write }: { instance: InstanceView; history: readonly HistoryEntry[]; write: boolean }) {
  const id = instance.id;
  const state = instance.state;
  const [segments, setSegments] = useState<Segment[]>([]);
  /** Where the current stream's output begins in `segments` (a reconnect to the same container replaces from there). */
  const streamStart = useRef(0);
  /** The container whose output the current stream shows (the log route's header; null when not named). */
  const streamContainer = useRef<string | null>(null);
  /**
   * What the instance looked like when the last stream ended (null while one runs): a later change of its state, of
   * its container's start time or of its revision (an update, a replacement) reads the log again.
   */
  const endedAt = useRef<string | null>(null);
  const watch = `${state}|${instance.observed?.startedAt ?? ''}|${instance.revision}`;
  const latestWatch = useRef(watch);
  latestWatch.current = watch;
  const latestState = useRef(state);
  latestState.current = state;
  const [note, setNote] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [generation, setGeneration] = useState(0);
  const pane = useRef<HTMLDivElement>(null);
  const container = !NO_CONTAINER.includes(state) && instance.observedState !== 'absent';
  const install = installOutput(history);

  useEffect(() => {
    setNote(undefined);
    setError(undefined);
    if (!container) {
      endedAt.current = latestWatch.current;
      return undefined;
    }
    const abort = new AbortController();
    endedAt.current = null;
    const started = Date.now();
    let first = true;
    (async () => {
      const res = await fetch(`/api/v1/instances/${enc(id)}/logs?follow=true&tail=${LOG_TAIL}`, {
        credentials: 'same-origin',
        headers: CSRF,
        signal: abort.signal,
      });
      if (!res.ok || !res.body) {
        const body = (await res.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
        throw new ApiError(res.status, body.error?.code ?? `HTTP_${res.status}`, body.error?.message ?? res.statusText);
      }
      const named = res.headers.get(LOG_CONTAINER_HEADER);
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const chunk = decoder.decode(value, { stream: true });
        const isFirst = first;
        first = false;
        // Whether the header says it is the container shown before (undefined: one of the two is not named).
        let sameNamed: boolean | undefined;
        if (isFirst) {
          const previous = streamContainer.current;
          streamContainer.current = named;
          sameNamed = named && previous ? named === previous : undefined;
        }
        setSegments((segs) => {
          let out = segs;
          if (isFirst) {
            // The same container's log again (a reconnect, a restart in place) replaces what this stream showed;
            // another container (the header names it; without the header: a log that does not hold the last line
            // shown) is a replacement: the old output stays above a marker.
            const last = lastLine(segs);
            const same = last === undefined || (sameNamed ?? chunk.includes(last));
            if (same) {
              out = [...segs.slice(0, streamStart.current), ...segs.slice(streamStart.current).filter((s) => s.kind === 'command')];
            } else {
              out = [
                ...segs,
                {
                  kind: 'mark',
                  text: `── a new container started ${new Date().toLocaleTimeString()}; the previous container's output is above ──`,
                },
              ];
            }
            streamStart.current = out.length;
          }
          const tail = out.at(-1);
          const next =
            tail?.kind === 'log'
              ? [...out.slice(0, -1), { kind: 'log' as const, text: (tail.text + chunk).slice(-LOG_MAX_CHARS) }]
              : [...out, { kind: 'log' as const, text: chunk }];
          return next.slice(-500);
        });
      }
      endedAt.current = latestWatch.current;
      const running = RUNNING.includes(latestState.current);
      // A stream that ran and ended while the server still runs: its container was stopped or replaced under the
      // same state; read the log again at once (a stream that ends at once waits for the next change instead).
      if (running && Date.now() - started >= 2000) {
        setGeneration((g) => g + 1);
        return;
      }
      setNote(
        !running
          ? first
            ? 'The server is not running; the log follows when it starts.'
            : `The server is not running: its last ${LOG_TAIL} lines. The log follows again when it starts.`
          : Date.now() - started < 2000
            ? `The log stream ended at once: the last ${LOG_TAIL} lines. It is read again when the state changes, or with Reconnect.`
            : 'The log stream ended (the container stopped or was replaced).',
      );
    })().catch((err: unknown) => {
      if (abort.signal.aborted) return;
      endedAt.current = latestWatch.current;
      // No container on the host (yet): nothing to show, which is not an error.
      if (err instanceof ApiError && err.status === 404) setNote('No container yet: the log starts when the server does.');
      else setError(err);
    });
    return () => abort.abort();
  }, [id, generation, container]);
  useEffect(() => {
    if (endedAt.current !== null && endedAt.current !== watch) setGeneration((g) => g + 1);
  }, [watch]);
  useEffect(() => {
    const el = pane.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [segments]);

  const waiting =
    state === 'installing'
      ? 'Installing… the log starts when the server does.'
      : state === 'archived'
        ? 'Archived: the container is gone (the world is kept). The log starts again when the server is started.'
        : 'No log yet.';
  const empty = segments.length === 0;
  return (
    <>
      <Section
        title="Console"
        actions={
          container ? (
            <button type="button" className="btn" onClick={() => setGeneration((g) => g + 1)}>
              Reconnect
            </button>
          ) : null
        }
      >
        <ErrorNote error={error} />
        <div className="terminal">
          {!empty ? (
            <div ref={pane} className="log" tabIndex={0} role="log" aria-label="Server console" aria-live="off" data-testid="log">
              {segments.map((s, n) =>
                s.kind === 'log' ? (
                  <span key={n}>{s.text}</span>
                ) : s.kind === 'mark' ? (
                  <span key={n} className="mark" data-testid="log-mark">{`\n${s.text}\n`}</span>
                ) : (
                  <span key={n} className="cmd" data-testid="console-output">
                    {`\n> ${s.command}\n`}
                    {s.response ? `${s.response}\n` : ''}
                  </span>
                ),
              )}
            </div>
          ) : null}
          {empty && (!container || !error) ? (
            <p className="muted" data-testid="log-status">
              {container ? 'No log yet.' : waiting}
            </p>
          ) : null}
          {write ? (
            <CommandLine id={id} onSent={(command, response) => setSegments((segs) => [...segs, { kind: 'command', command, response }])} />
          ) : null}
        </div>
        {note ? <p className="muted small">{note}</p> : null}
        {install !== undefined ? (
          <>
            <h3>Install output</h3>
            <pre className="log" tabIndex={0} aria-label="Install script output" data-testid="install-output">
              {install || '(the script wrote nothing)'}
            </pre>
          </>
        ) : null}
      </Section>
      <Section title="Resources">
        <StatsCharts id={id} running={RUNNING.includes(state)} />
      </Section>
    </>
  );
}

/** The command line: Enter sends, ↑/↓ walk the commands sent before (kept per server for this browser tab). */
function CommandLine({ id, onSent }: { id: string; onSent: (command: string, response: string) => void }) {
  const [command, setCommand] = useState('');
  const [sent, setSent] = useState<string[]>([]);
  /** Position while walking the history: sent.length = the line being typed. */
  const [pos, setPos] = useState(0);
  const draft = useRef('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    setSent([]);
    setPos(0);
  }, [id]);
  const walk = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key !== 'ArrowUp' && e.key !== 'ArrowDown') return;
    e.preventDefault();
    if (pos === sent.length) draft.current = command;
    const next = e.key === 'ArrowUp' ? Math.max(0, pos - 1) : Math.min(sent.length, pos + 1);
    setPos(next);
    setCommand(next === sent.length ? draft.current : sent[next]!);
  };
  return (
    <form
      className="command-line"
      onSubmit={(e) => {
        e.preventDefault();
        const c = command.trim();
        if (!c) return;
        setBusy(true);
        setError(undefined);
        api<ConsoleAnswer>('POST', `/instances/${enc(id)}/console`, { command: c })
          .then((r) => {
            onSent(c, r.via === 'stdin' ? '(sent to stdin)' : (r.response ?? ''));
            const list = [...sent.filter((x) => x !== c), c].slice(-HISTORY_MAX);
            setSent(list);
            setPos(list.length);
            draft.current = '';
            setCommand('');
          }, setError)
          .finally(() => setBusy(false));
      }}
    >
      <span className="prompt" aria-hidden="true">
        &gt;
      </span>
      <input
        value={command}
        onChange={(e) => {
          setCommand(e.target.value);
          setPos(sent.length);
        }}
        onKeyDown={walk}
        placeholder="type a command, ↑/↓ for the ones sent before"
        aria-label="Console command"
        autoComplete="off"
        spellCheck={false}
      />
      <button className="btn btn-primary" type="submit" disabled={busy}>
        Send
      </button>
      <ErrorNote error={error} />
    </form>
  );
}
