// The text editor of the Files tab: CodeMirror with syntax for json, yaml,
// properties and toml. Loaded on demand (a dynamic import from Files.tsx), so
// the panel's first page does not carry it.

import { useEffect, useRef, useState } from 'react';
import { EditorView, basicSetup } from 'codemirror';
import { EditorState, type Extension } from '@codemirror/state';
import { keymap } from '@codemirror/view';
import { StreamLanguage } from '@codemirror/language';
import { json } from '@codemirror/lang-json';
import { yaml } from '@codemirror/lang-yaml';
import { properties } from '@codemirror/legacy-modes/mode/properties';
import { toml } from '@codemirror/legacy-modes/mode/toml';

/** The syntax for a file name (none for other files). */
function languageOf(name: string): Extension[] {
  const lower = name.toLowerCase();
  if (lower.endsWith('.json') || lower.endsWith('.mcmeta')) return [json()];
  if (lower.endsWith('.yml') || lower.endsWith('.yaml')) return [yaml()];
  if (lower.endsWith('.properties') || lower.endsWith('.cfg') || lower.endsWith('.conf') || lower.endsWith('.ini'))
    return [StreamLanguage.define(properties)];
  if (lower.endsWith('.toml')) return [StreamLanguage.define(toml)];
  return [];
}

export default function FileEditor({
  name,
  initial,
  onSave,
  onClose,
}: {
  name: string;
  initial: string;
  onSave: (text: string) => Promise<unknown>;
  onClose: () => void;
}) {
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const [dirty, setDirty] = useState(false);
  const [busy, setBusy] = useState(false);
  const save = useRef<() => void>(() => undefined);
  save.current = () => {
    const text = view.current?.state.doc.toString();
    if (text === undefined) return;
    setBusy(true);
    onSave(text)
      .then(
        () => setDirty(false),
        () => undefined,
      )
      .finally(() => setBusy(false));
  };
  useEffect(() => {
    const el = host.current;
    if (!el) return undefined;
    // In a shadow root CodeMirror styles itself with constructed stylesheets: the panel's CSP
    // (default-src 'self', no inline <style>) would block the <style> tags it adds to a document.
    const shadow = el.shadowRoot ?? el.attachShadow({ mode: 'open' });
    const parent = document.createElement('div');
    shadow.replaceChildren(parent);
    const v = new EditorView({
      parent,
      root: shadow,
      state: EditorState.create({
        doc: initial,
        extensions: [
          basicSetup,
          ...languageOf(name),
          keymap.of([
            {
              key: 'Mod-s',
              preventDefault: true,
              run: () => {
                save.current();
                return true;
              },
            },
          ]),
          EditorView.updateListener.of((u) => {
            if (u.docChanged) setDirty(true);
          }),
          EditorView.contentAttributes.of({ 'aria-label': `Contents of ${name}` }),
          EditorView.theme({
            '&': { maxHeight: '60vh', fontSize: '14px' },
            '.cm-scroller': { overflow: 'auto', fontFamily: 'ui-monospace, "DejaVu Sans Mono", monospace' },
            '&.cm-focused': { outline: '3px solid #1a73e8', outlineOffset: '2px' },
          }),
        ],
      }),
    });
    view.current = v;
    v.focus();
    return () => {
      v.destroy();
      view.current = null;
    };
  }, [name, initial]);
  return (
    <div className="editor" data-testid="file-editor">
      <div className="row between">
        <strong>
          <code>{name}</code>
          {dirty ? ' (changed)' : ''}
        </strong>
        <div className="row">
          <button type="button" className="btn btn-primary" disabled={busy} onClick={() => save.current()}>
            {busy ? 'Saving…' : 'Save file'}
          </button>
          <button type="button" className="btn" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
      <div ref={host} className="editor-host" />
      <p className="muted small">Ctrl/⌘+S saves; Tab moves on to the next control.</p>
    </div>
  );
}
