// The Startup tab: the template's variables with description, rules, default
// and current value, editable where this token may (operator-only and hidden
// ones: operators), each change checked by the server and its refusal shown
// at the field; the startup command rendered with this server's values; the
// image choice an egg offers (applied through the update plan).

import { useState } from 'react';
import { api, enc, type Answer, type Me } from '../../api';
import { useResource } from '../../live';
import type { GroupView, InstanceView, JsonValue, TemplateView } from '../../types';
import { Empty, ErrorNote, Section } from '../../ui';
import { formError, mayEdit, messageFor, textOf, typedValue, VariableField } from '../../variables';
import { Update } from './Manage';

/** Placeholders in a template command, as the server fills them (orchestrator/src/eggs/startup.ts). */
const REFERENCE = /\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}|\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** PATCH /instances/:id/settings. */
type SettingsAnswer = Answer<'PATCH /instances/:id/settings'>;

function useTemplateOf(instance: InstanceView) {
  const groups = useResource<{ groups: GroupView[] }>('/groups', ['group']);
  const variant = groups.data?.groups.find((g) => g.id === instance.groupId)?.variants.find((v) => v.id === instance.variantId);
  const template = useResource<TemplateView>(
    variant ? `/templates/${enc(variant.template.name)}/versions/${enc(variant.template.version)}` : null,
    [],
  );
  return { template: template.data, error: groups.error ?? template.error };
}

export function StartupTab({ instance, me, write }: { instance: InstanceView; me: Me; write: boolean }) {
  const { template, error: loadError } = useTemplateOf(instance);
  const [edits, setEdits] = useState<Record<string, string>>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<string>();
  if (!template)
    return (
      <>
        <ErrorNote error={loadError} />
        {loadError ? null : <p aria-busy="true">Loading the template…</p>}
      </>
    );
  const pending = new Map(instance.pendingChanges.map((p) => [p.key, p]));
  const hidden = new Set(instance.hiddenSettings ?? []);
  const current = (name: string): string => {
    const p = pending.get(`settings.${name}`);
    if (p && !p.secret && !p.hidden && p.value !== undefined) return textOf(p.value);
    return textOf(instance.settings[name]);
  };
  const values: Record<string, string> = {};
  for (const v of template.variables) {
    const shown = !v.secret && !(hidden.has(v.name) && instance.settings[v.name] === undefined);
    values[v.name] = edits[v.name] ?? (shown ? current(v.name) : '');
  }
  const changed = template.variables.filter((v) => edits[v.name] !== undefined && edits[v.name] !== (v.secret ? '' : current(v.name)));
  const env: Record<string, string> = {};
  for (const v of template.variables) {
    const value = v.secret ? '••••' : instance.settings[v.name] === undefined ? textOf(v.default) : textOf(instance.settings[v.name]);
    env[v.env ?? v.name] = value;
  }
  const command = template.command
    ?.map((arg) => arg.replace(REFERENCE, (_all, a: string | undefined, b: string | undefined) => env[(a ?? b)!] ?? ''))
    .join(' ');
  const fields = template.variables.map((v) => `settings.${v.name}`);
  return (
    <>
      <Section title="Startup command">
        {command !== undefined ? (
          <pre className="json" data-testid="startup-command" tabIndex={0}>
            {command}
          </pre>
        ) : (
          <p className="muted" data-testid="startup-command">
            The image's own command (the template sets none).
          </p>
        )}
        <p className="muted small">
          Rendered with this server's values (secrets shown as ••••); the container gets it when it is created or replaced.
        </p>
      </Section>
      <Section title="Variables">
        {template.variables.length === 0 ? (
          <Empty>This template has no variable.</Empty>
        ) : (
          <form
            noValidate
            onSubmit={(e) => {
              e.preventDefault();
              if (changed.length === 0) return;
              const settings: Record<string, JsonValue> = {};
              for (const v of changed) settings[v.name] = typedValue(v, edits[v.name]!);
              setBusy(true);
              setError(undefined);
              setResult(undefined);
              api<SettingsAnswer>('PATCH', `/instances/${enc(instance.id)}/settings`, { settings })
                .then((r) => {
                  setEdits({});
                  setResult(
                    r.applied.length
                      ? `Applied now: ${r.applied.join(', ')}.`
                      : 'Saved: the change applies at the next restart (see Pending changes in Settings).',
                  );
                }, setError)
                .finally(() => setBusy(false));
            }}
          >
            <div className="form-grid">
              {template.variables.map((v) => {
                const editable = write && mayEdit(v, me.scopes);
                const p = pending.get(`settings.${v.name}`);
                return (
                  <div key={v.name}>
                    <VariableField
                      variable={v}
                      idPrefix="startup"
                      value={values[v.name] ?? ''}
                      disabled={!editable || busy}
                      placeholder={
                        v.secret
                          ? instance.secretSettings.includes(v.name)
                            ? '(set; type to replace)'
                            : '(not set)'
                          : v.default !== undefined
                            ? `default: ${textOf(v.default)}`
                            : undefined
                      }
                      onChange={(text) => {
                        setEdits({ ...edits, [v.name]: text });
                        setResult(undefined);
                      }}
                      error={messageFor(error, `settings.${v.name}`)}
                    />
                    {p ? (
                      <p className="muted small" data-testid={`pending-${v.name}`}>
                        Pending until the next restart: {p.secret ? '(secret)' : p.hidden ? '(hidden)' : textOf(p.value)}
                      </p>
                    ) : null}
                    {!editable && write ? <p className="muted small">Only operators may change it.</p> : null}
                  </div>
                );
              })}
            </div>
            {write ? (
              <div className="row">
                <button className="btn btn-primary" type="submit" disabled={busy || changed.length === 0}>
                  {busy ? 'Saving…' : 'Save changes'}
                </button>
                {changed.length ? (
                  <button className="btn" type="button" onClick={() => setEdits({})}>
                    Undo
                  </button>
                ) : null}
              </div>
            ) : null}
          </form>
        )}
        <ErrorNote error={formError(error, fields)} />
        {result ? (
          <p role="status" className="muted">
            {result}
          </p>
        ) : null}
      </Section>
      {template.images && Object.keys(template.images).length > 1 ? (
        <ImageChoice instance={instance} images={template.images} write={write} />
      ) : null}
    </>
  );
}

/** The images an egg offers: choosing one goes through the update plan (Settings → Update image does the same for any image). */
function ImageChoice({ instance, images, write }: { instance: InstanceView; images: Record<string, string>; write: boolean }) {
  const [chosen, setChosen] = useState(instance.image);
  const [key, setKey] = useState(0);
  return (
    <>
      <Section title="Image">
        <div className="field">
          <label htmlFor="startup-image">Image (the template offers {Object.keys(images).length})</label>
          <select
            id="startup-image"
            value={chosen}
            onChange={(e) => {
              setChosen(e.target.value);
              setKey((k) => k + 1);
            }}
            disabled={!write}
          >
            {!Object.values(images).includes(instance.image) ? <option value={instance.image}>{instance.image} (current)</option> : null}
            {Object.entries(images).map(([label, image]) => (
              <option key={label} value={image}>
                {label}: {image}
                {image === instance.image ? ' (current)' : ''}
              </option>
            ))}
          </select>
        </div>
      </Section>
      {write && chosen !== instance.image ? <Update key={key} instance={instance} initial={chosen} /> : null}
    </>
  );
}
