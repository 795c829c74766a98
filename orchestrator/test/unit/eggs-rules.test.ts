import { describe, expect, it } from 'vitest';
import { BOOLEAN_VALUES, phpRegexToPattern, splitRules, translateRules } from '../../src/eggs/rules.js';

describe('translateRules: every Laravel rule an egg uses', () => {
  const table: [string, Partial<ReturnType<typeof translateRules>>][] = [
    ['', { type: 'string', required: false, nullable: false, validation: {}, untranslated: [] }],
    ['required', { type: 'string', required: true, validation: {} }],
    ['nullable', { type: 'string', required: false, nullable: true }],
    ['required|string', { type: 'string', required: true, validation: {} }],
    ['string|max:20', { type: 'string', validation: { maxLength: 20 } }],
    ['string|min:3', { type: 'string', validation: { minLength: 3 } }],
    ['required|string|between:3,16', { type: 'string', required: true, validation: { minLength: 3, maxLength: 16 } }],
    ['integer', { type: 'integer', validation: {} }],
    ['required|integer|min:1|max:65535', { type: 'integer', required: true, validation: { min: 1, max: 65535 } }],
    ['integer|between:1,100', { type: 'integer', validation: { min: 1, max: 100 } }],
    ['numeric', { type: 'number', validation: {} }],
    ['numeric|min:0.5', { type: 'number', validation: { min: 0.5 } }],
    ['required|boolean', { type: 'enum', required: true, validation: { values: BOOLEAN_VALUES } }],
    ['required|string|in:vanilla,paper,forge', { type: 'enum', required: true, validation: { values: ['vanilla', 'paper', 'forge'] } }],
    ['in:1,2', { type: 'enum', validation: { values: ['1', '2'] } }],
    ['regex:/^[a-z]+$/', { type: 'string', validation: { pattern: '^[a-z]+$' } }],
    ['required|string|regex:/^(latest|[0-9.]+)$/', { type: 'string', required: true, validation: { pattern: '^(latest|[0-9.]+)$' } }],
    ['regex:#^https?://#', { type: 'string', validation: { pattern: '^https?://' } }],
    ['nullable|string|max:64', { type: 'string', nullable: true, validation: { maxLength: 64 } }],
    ['alpha_num|max:10', { type: 'string', validation: { pattern: '^[A-Za-z0-9]*$', maxLength: 10 } }],
  ];
  for (const [rules, expected] of table) {
    it(`"${rules}"`, () => {
      const t = translateRules(rules);
      expect(t).toMatchObject(expected);
      expect(t.untranslated).toEqual([]);
    });
  }

  it('accepts the array form Pelican exports', () => {
    expect(translateRules(['required', 'integer', 'max:10'])).toMatchObject({ type: 'integer', required: true, validation: { max: 10 } });
  });

  const refusals: [string, RegExp][] = [
    ['required|url', /url: no equivalent validation/],
    ['string|confirmed', /confirmed: no equivalent/],
    ['max:ten', /max needs a number/],
    ['between:5,1', /lower bound exceeds/],
    ['between:1', /between needs two numbers/],
    ['regex:/^a$/i', /flags "i" have no equivalent/],
    ['regex:abc', /no delimiter/],
    ['regex:/(?<x/', /does not compile/],
    ['integer|regex:/^1$/', /patterns apply to string variables only/],
    ['integer|string', /conflicts with an earlier type rule/],
    ['boolean|max:3', /no meaning for an enum/],
  ];
  for (const [rules, reason] of refusals) {
    it(`lists "${rules}" as untranslated, never drops it`, () => {
      const t = translateRules(rules);
      expect(t.untranslated.join('\n')).toMatch(reason);
    });
  }

  it('keeps what it can beside what it cannot', () => {
    const t = translateRules('required|string|max:20|url');
    expect(t).toMatchObject({ required: true, type: 'string', validation: { maxLength: 20 } });
    expect(t.untranslated).toHaveLength(1);
  });
});

describe('splitRules and phpRegexToPattern', () => {
  it('does not split a regex at its own |', () => {
    expect(splitRules('required|regex:/^(a|b)$/|max:3')).toEqual(['required', 'regex:/^(a|b)$/', 'max:3']);
  });
  it('reads bracket delimiters', () => {
    expect(phpRegexToPattern('{^x$}')).toEqual({ pattern: '^x$' });
  });
});
