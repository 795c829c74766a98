// A template's variables as form fields (the create form and the Startup tab):
// the value typed as the variable's type, the rules in words, and the server's
// refusal shown at the field it names (`body/settings/NAME …`).

import { ApiError, forPeople } from './api';
import type { JsonValue, TemplateVariable } from './types';

/** The field a VALIDATION_FAILED names ("body/settings/LEVEL_SEED must match …" → "settings.LEVEL_SEED"), and its problem. */
export function fieldError(error: unknown): { field: string; message: string } | undefined {
  if (!(error instanceof ApiError) || error.status !== 400) return undefined;
  const m = /^body\/(\S+)\s+([\s\S]+)$/.exec(error.message) ?? /^body\/(\S+):\s+([\s\S]+)$/.exec(error.message);
  if (!m) return undefined;
  return { field: m[1]!.replace(/\//g, '.'), message: forPeople(m[2]!) };
}

/** The error for the form's own note: nothing when it is shown at a field. */
export function formError(error: unknown, fields: readonly string[]): unknown {
  const f = fieldError(error);
  return f && fields.includes(f.field) ? undefined : error;
}

/** The rules of a variable in words (what the server checks). */
export function rulesText(v: TemplateVariable): string {
  const r = v.validation ?? {};
  const parts: string[] = [v.type === 'enum' ? 'one of the choices' : v.type];
  if (v.required) parts.push('required');
  if (r.min !== undefined) parts.push(`≥ ${r.min}`);
  if (r.max !== undefined) parts.push(`≤ ${r.max}`);
  if (r.minLength !== undefined) parts.push(`at least ${r.minLength} characters`);
  if (r.maxLength !== undefined) parts.push(`at most ${r.maxLength} characters`);
  if (r.pattern !== undefined) parts.push(`matches ${r.pattern}`);
  if (v.secret) parts.push('secret: never shown again');
  if (v.operatorOnly || v.hidden) parts.push('operators only');
  if (v.apply === 'immediate') parts.push('applies at once');
  else parts.push('applies at the next restart');
  return parts.join(' · ');
}

/** The JSON value a typed text stands for, by the variable's type (the server checks the rules). */
export function typedValue(v: TemplateVariable, text: string): JsonValue {
  if (v.type === 'integer' || v.type === 'number') return text.trim() === '' || Number.isNaN(Number(text)) ? text : Number(text);
  if (v.type === 'boolean') return text === 'true';
  return text;
}

/** The text a value is edited as. */
export function textOf(value: unknown): string {
  if (value === undefined || value === null) return '';
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** Whether this token may set it (operator-only and hidden ones: admin, manager, operator). */
export function mayEdit(v: TemplateVariable, scopes: readonly string[]): boolean {
  if (!(v.operatorOnly || v.hidden)) return true;
  return scopes.some((s) => ['admin', 'manager', 'operator'].includes(s));
}

/** One variable as a labelled field; `error` is the server's message for it. */
export function VariableField({
  variable: v,
  value,
  onChange,
  disabled,
  error,
  idPrefix,
  placeholder,
}: {
  variable: TemplateVariable;
  value: string;
  onChange: (text: string) => void;
  disabled?: boolean;
  error?: string | undefined;
  idPrefix: string;
  placeholder?: string;
}) {
  const id = `${idPrefix}-${v.name}`;
  const describedBy = `${id}-help${error ? ` ${id}-error` : ''}`;
  const common = { id, disabled, 'aria-describedby': describedBy, 'aria-invalid': error ? true : undefined, name: v.name } as const;
  const choices = v.type === 'enum' ? (v.validation?.values ?? []) : v.type === 'boolean' ? ['true', 'false'] : undefined;
  return (
    <div className={error ? 'field var invalid' : 'field var'} data-variable={v.name}>
      <label htmlFor={id}>
        <code>{v.name}</code>
        {v.required ? ' *' : ''}
      </label>
      {choices ? (
        <select {...common} value={value} onChange={(e) => onChange(e.target.value)}>
          <option value="">{placeholder ?? '(default)'}</option>
          {choices.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
      ) : (
        <input
          {...common}
          value={value}
          onChange={(e) => onChange(e.target.value)}
          type={v.secret ? 'password' : 'text'}
          inputMode={v.type === 'integer' || v.type === 'number' ? 'numeric' : undefined}
          autoComplete={v.secret ? 'new-password' : 'off'}
          spellCheck={false}
          placeholder={placeholder}
        />
      )}
      <span id={`${id}-help`} className="muted small">
        {v.description ? `${v.description} · ` : ''}
        {rulesText(v)}
        {v.default !== undefined ? ` · default ${textOf(v.default)}` : ''}
      </span>
      {error ? (
        <span id={`${id}-error`} className="error small" role="alert">
          {error}
        </span>
      ) : null}
    </div>
  );
}

/** The message a field shows for `error` when it names `field`. */
export function messageFor(error: unknown, field: string): string | undefined {
  const f = fieldError(error);
  return f && f.field === field ? f.message : undefined;
}
