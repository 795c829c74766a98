// Egg variables → typed template variables, pure: env name, default typed by
// the translated rules, operator-only when users may not edit it, and also
// hidden (its value shown to operators only) when users may not see it.
// A `boolean` variable keeps the egg's own pair of values (`1`/`0` or
// `true`/`false`): its default says which, else how the startup line and the
// install script compare it; input in the other spelling is normalised to it.

import type { JsonValue } from '../domain/common.js';
import type { BooleanValues, VariableSpec } from '../domain/template.js';
import { normalizeBoolean } from './boolean-values.js';
import { BOOLEAN_VALUES, translateRules } from './rules.js';

export interface EggFinding {
  field: string;
  reason: string;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const VARIABLE_FIELDS = [
  'name',
  'description',
  'env_variable',
  'default_value',
  'user_viewable',
  'user_editable',
  'rules',
  'field_type',
  'sort',
  'id',
  'egg_id',
  'created_at',
  'updated_at',
];

function typedDefault(v: VariableSpec, raw: string): { value?: JsonValue; problem?: string } {
  const rules = v.validation ?? {};
  switch (v.type) {
    case 'integer':
    case 'number': {
      const n = Number(raw);
      if (raw.trim() === '' || !Number.isFinite(n) || (v.type === 'integer' && !Number.isInteger(n)))
        return { problem: `"${raw}" is not a${v.type === 'integer' ? 'n integer' : ' number'}` };
      if ((rules.min !== undefined && n < rules.min) || (rules.max !== undefined && n > rules.max))
        return { problem: `${n} is outside its own bounds` };
      return { value: n };
    }
    case 'enum':
      return (rules.values ?? []).includes(raw) ? { value: raw } : { problem: `"${raw}" is not one of ${(rules.values ?? []).join(', ')}` };
    default: {
      if (rules.maxLength !== undefined && raw.length > rules.maxLength) return { problem: 'is longer than its own max' };
      if (rules.minLength !== undefined && raw.length < rules.minLength) return { problem: 'is shorter than its own min' };
      if (rules.pattern !== undefined && !new RegExp(rules.pattern).test(raw))
        return { problem: `does not match its own regex ${rules.pattern}` };
      return { value: raw };
    }
  }
}

const NUMERIC: BooleanValues = { true: '1', false: '0' };
const WORDS: BooleanValues = { true: 'true', false: 'false' };

/** The egg's pair for a boolean variable: from its default, else from a comparison in the egg's scripts (`"$BATTLE_EYE" == "1"`), else unknown. */
export function booleanRepresentation(env: string, rawDefault: string, scriptText: string): BooleanValues | undefined {
  const d = rawDefault.trim().toLowerCase();
  if (d === '1' || d === '0') return NUMERIC;
  if (d === 'true' || d === 'false') return WORDS;
  const ref = `(?:\\$\\{?${env}\\}?|\\{\\{\\s*${env}\\s*\\}\\})(?![A-Za-z0-9_])`;
  const cmp = new RegExp(
    `${ref}["']?\\s*(?:==|!=|=|-eq|-ne)\\s*["']?(1|0|true|false)\\b|["']?(1|0|true|false)["']?\\s*(?:==|!=|=|-eq|-ne)\\s*["']?${ref}`,
    'i',
  );
  const m = cmp.exec(scriptText);
  const word = (m?.[1] ?? m?.[2])?.toLowerCase();
  if (word === undefined) return undefined;
  return word === '1' || word === '0' ? NUMERIC : WORDS;
}

export interface VariableImport {
  variables: VariableSpec[];
  untranslated: EggFinding[];
  unknownFields: string[];
  mapped: { from: string; to: string }[];
  refused?: string;
}

/** `scriptText`: the startup line and install script, read for how a boolean variable is compared. */
export function importVariables(raw: unknown, scriptText = ''): VariableImport {
  const out: VariableImport = { variables: [], untranslated: [], unknownFields: [], mapped: [] };
  if (raw === undefined || raw === null) return out;
  if (!Array.isArray(raw)) return { ...out, refused: 'variables must be a list' };
  for (const [i, item] of raw.entries()) {
    const field = `variables[${i}]`;
    if (typeof item !== 'object' || item === null) return { ...out, refused: `${field} is not an object` };
    const v = item as Record<string, unknown>;
    for (const key of Object.keys(v)) if (!VARIABLE_FIELDS.includes(key)) out.unknownFields.push(`${field}.${key}`);
    const env = typeof v.env_variable === 'string' ? v.env_variable.trim() : '';
    if (!ENV_NAME.test(env) || env.length > 128)
      return { ...out, refused: `${field}.env_variable "${String(v.env_variable)}" is not an environment variable name` };
    const t = translateRules(v.rules as string | string[] | undefined);
    for (const reason of t.untranslated) out.untranslated.push({ field: `${field}.rules (${env})`, reason });
    const label = typeof v.name === 'string' ? v.name.trim() : '';
    const about = typeof v.description === 'string' ? v.description.trim() : '';
    const spec: VariableSpec = { name: env, type: t.type, env };
    const description = [label, about]
      .filter((s) => s.length > 0)
      .join(': ')
      .slice(0, 1000);
    if (description) spec.description = description;
    if (t.required) spec.required = true;
    if (Object.keys(t.validation).length > 0) spec.validation = t.validation;
    if (v.user_editable === false || v.user_editable === 0 || v.user_viewable === false || v.user_viewable === 0) spec.operatorOnly = true;
    if (v.user_viewable === false || v.user_viewable === 0) spec.hidden = true;
    let rawDefault = v.default_value === undefined || v.default_value === null ? '' : String(v.default_value);
    if (t.boolean) {
      const form = booleanRepresentation(env, rawDefault, scriptText);
      if (form) {
        rawDefault = rawDefault === '' ? '' : String(normalizeBoolean(form, rawDefault));
        spec.booleanValues = form;
        spec.validation = { ...spec.validation, values: [form.true, form.false] };
        out.mapped.push({
          from: `${field}.rules (${env}) boolean`,
          to: `values ${form.true}/${form.false}, as the egg's ${/^(1|0|true|false)$/i.test(rawDefault.trim()) ? 'default spells them' : 'scripts spell them'}; true/false/1/0 given are stored as ${form.true}/${form.false}`,
        });
      } else {
        out.untranslated.push({
          field: `${field}.rules (${env})`,
          reason: `boolean: neither the default nor the egg's scripts say whether it is 1/0 or true/false; values are kept as given (${BOOLEAN_VALUES.join(', ')})`,
        });
      }
    }
    if (rawDefault !== '') {
      const d = typedDefault(spec, rawDefault);
      if (d.problem !== undefined)
        out.untranslated.push({
          field: `${field}.default_value (${env})`,
          reason: `${d.problem}: no default kept, give the value per instance`,
        });
      else if (d.value !== undefined) spec.default = d.value;
    }
    out.mapped.push({
      from: field,
      to: `variable ${env} (${spec.type}${spec.required ? ', required' : ''}${spec.operatorOnly ? ', operator-only' : ''}${spec.hidden ? ', hidden' : ''})`,
    });
    out.variables.push(spec);
  }
  return out;
}
