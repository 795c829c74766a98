// Laravel-style egg variable rules (`required|string|max:20`), pure: translated
// into a typed template variable's type and validation. Every rule this cannot
// express is returned in `untranslated`, never dropped silently.

import type { VariableType, VariableValidation } from '../domain/template.js';

export interface RuleTranslation {
  type: VariableType;
  required: boolean;
  /** `nullable`: an empty value is allowed (the variable may be left unset). */
  nullable: boolean;
  validation: VariableValidation;
  /** The `boolean` rule was given: the importer picks the egg's representation (egg-variables.ts). */
  boolean: boolean;
  /** `rule: why` for each rule that has no equivalent here. */
  untranslated: string[];
}

/** Laravel's `boolean` accepts these; narrowed to the egg's own pair (`1`/`0` or `true`/`false`) when the importer can tell which. */
export const BOOLEAN_VALUES = ['0', '1', 'true', 'false'];

/** Splits a rule string (`a|b`) or array (Pelican) into rules; `regex:` may itself contain `|`. */
export function splitRules(rules: string | readonly string[] | undefined | null): string[] {
  if (rules === undefined || rules === null) return [];
  if (Array.isArray(rules)) return rules.map((r) => String(r).trim()).filter((r) => r.length > 0);
  const out: string[] = [];
  let rest = String(rules);
  while (rest.length > 0) {
    const regexStart = /^regex:(.)/.exec(rest);
    if (regexStart) {
      // Up to the closing delimiter (plus flags), then the next `|`.
      const delim = regexStart[1] as string;
      const close = rest.indexOf(delim, 'regex:'.length + 1);
      const bar = close < 0 ? -1 : rest.indexOf('|', close);
      out.push((bar < 0 ? rest : rest.slice(0, bar)).trim());
      rest = bar < 0 ? '' : rest.slice(bar + 1);
      continue;
    }
    const bar = rest.indexOf('|');
    out.push((bar < 0 ? rest : rest.slice(0, bar)).trim());
    rest = bar < 0 ? '' : rest.slice(bar + 1);
  }
  return out.filter((r) => r.length > 0);
}

/** `/^[a-z]+$/i` (PHP PCRE) → a JavaScript pattern, or why not. */
export function phpRegexToPattern(literal: string): { pattern: string } | { error: string } {
  const delim = literal[0];
  if (delim === undefined || /[A-Za-z0-9\\\s]/.test(delim)) return { error: 'the pattern has no delimiter' };
  const closing = ({ '(': ')', '{': '}', '[': ']', '<': '>' } as Record<string, string>)[delim] ?? delim;
  const end = literal.lastIndexOf(closing);
  if (end <= 0) return { error: 'the pattern is not closed' };
  const body = literal.slice(1, end);
  const flags = literal.slice(end + 1);
  if (flags !== '' && flags !== 'u')
    return { error: `flags "${flags}" have no equivalent (only "u" is accepted; validation patterns are case-sensitive)` };
  try {
    new RegExp(body);
  } catch (err) {
    return { error: `does not compile in JavaScript: ${(err as Error).message}` };
  }
  return { pattern: body };
}

const TYPE_RULES: Record<string, VariableType> = {
  string: 'string',
  integer: 'integer',
  numeric: 'number',
  boolean: 'enum',
  alpha_num: 'string',
};

function number(text: string): number | undefined {
  if (!/^-?\d+(\.\d+)?$/.test(text.trim())) return undefined;
  return Number(text);
}

/**
 * Rules → type and validation. `max`/`min`/`between` mean a length for strings
 * and a value for numbers (as in Laravel), so they are applied once the type is known.
 */
export function translateRules(rules: string | readonly string[] | undefined | null): RuleTranslation {
  const list = splitRules(rules);
  const untranslated: string[] = [];
  let type: VariableType | undefined;
  let required = false;
  let nullable = false;
  let boolean = false;
  const bounds: { min?: number; max?: number } = {};
  const validation: VariableValidation = {};
  for (const rule of list) {
    const colon = rule.indexOf(':');
    const name = (colon < 0 ? rule : rule.slice(0, colon)).trim();
    const arg = colon < 0 ? '' : rule.slice(colon + 1);
    const setType = (t: VariableType) => {
      if (type !== undefined && type !== t) untranslated.push(`${rule}: conflicts with an earlier type rule (kept ${type})`);
      else type = t;
    };
    switch (name) {
      case 'required':
        required = true;
        break;
      case 'nullable':
      case 'sometimes':
      case 'present':
        nullable = nullable || name === 'nullable';
        break;
      case 'string':
      case 'integer':
      case 'numeric':
        setType(TYPE_RULES[name] as VariableType);
        break;
      case 'boolean':
        setType('enum');
        validation.values = [...BOOLEAN_VALUES];
        boolean = true;
        break;
      case 'alpha_num':
      case 'alpha_dash':
      case 'alpha': {
        setType('string');
        validation.pattern = { alpha_num: '^[A-Za-z0-9]*$', alpha_dash: '^[A-Za-z0-9_-]*$', alpha: '^[A-Za-z]*$' }[name];
        break;
      }
      case 'max':
      case 'min': {
        const n = number(arg);
        if (n === undefined) untranslated.push(`${rule}: ${name} needs a number`);
        else bounds[name] = n;
        break;
      }
      case 'between': {
        const [a, b, ...more] = arg.split(',').map((s) => number(s));
        if (a === undefined || b === undefined || more.length > 0) untranslated.push(`${rule}: between needs two numbers`);
        else if (a > b) untranslated.push(`${rule}: the lower bound exceeds the upper one`);
        else Object.assign(bounds, { min: a, max: b });
        break;
      }
      case 'in': {
        const values = arg.split(',').map((v) => v.trim().replace(/^"(.*)"$/, '$1'));
        if (values.length === 0 || values.some((v) => v.length === 0)) untranslated.push(`${rule}: in needs a list of values`);
        else {
          if (type !== undefined && type !== 'string' && type !== 'enum')
            untranslated.push(`${rule}: a list of values for a ${type} variable is kept as an enum of strings`);
          type = 'enum';
          validation.values = values;
        }
        break;
      }
      case 'regex': {
        const converted = phpRegexToPattern(arg);
        if ('error' in converted) untranslated.push(`${rule}: ${converted.error}`);
        else validation.pattern = converted.pattern;
        break;
      }
      default:
        untranslated.push(
          `${rule}: no equivalent validation (${name} is not one of required, nullable, string, integer, numeric, boolean, max, min, between, in, regex)`,
        );
    }
  }
  const finalType: VariableType = type ?? 'string';
  if (validation.pattern !== undefined && finalType !== 'string') {
    untranslated.push(`regex: patterns apply to string variables only (this one is ${finalType})`);
    delete validation.pattern;
  }
  if (finalType === 'string') {
    if (bounds.min !== undefined) validation.minLength = bounds.min;
    if (bounds.max !== undefined) validation.maxLength = bounds.max;
  } else if (finalType === 'integer' || finalType === 'number') {
    if (bounds.min !== undefined) validation.min = bounds.min;
    if (bounds.max !== undefined) validation.max = bounds.max;
  } else if (bounds.min !== undefined || bounds.max !== undefined) {
    untranslated.push(`min/max: no meaning for an enum variable (the list of values already bounds it)`);
  }
  if ((validation.minLength ?? 0) < 0 || (validation.maxLength ?? 0) < 0) {
    untranslated.push('min/max: a negative length bound');
    delete validation.minLength;
    delete validation.maxLength;
  }
  return { type: finalType, required, nullable, validation, boolean: boolean && finalType === 'enum', untranslated };
}
