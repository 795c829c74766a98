// Operator-only and hidden template variables (egg `user_editable: false`,
// `user_viewable: false`), pure: a narrow token (`instances:write`) may not set
// an operator-only one, nor see the value of a hidden one; operators may.

import type { TemplateSpec } from '../domain/template.js';
import { AppError } from '../shared/errors.js';

const OPERATOR_SCOPES: readonly string[] = ['admin', 'manager', 'operator'];

type PrincipalLike = { name: string; scopes: readonly string[] } | undefined;

const isOperator = (principal: PrincipalLike): boolean => (principal?.scopes ?? []).some((s) => OPERATOR_SCOPES.includes(s));

/** Names whose values a reader may not see: settings keys (variable names) and the env names they are passed as. */
export interface HiddenValues {
  settings: ReadonlySet<string>;
  env: ReadonlySet<string>;
}

export const NOTHING_HIDDEN: HiddenValues = { settings: new Set(), env: new Set() };

/** What `principal` may not see of an instance of `template`: its hidden variables, unless the principal is an operator. */
export function hiddenFrom(principal: PrincipalLike, template: TemplateSpec | undefined): HiddenValues {
  const hidden = (template?.variables ?? []).filter((v) => v.hidden === true);
  if (hidden.length === 0 || isOperator(principal)) return NOTHING_HIDDEN;
  return { settings: new Set(hidden.map((v) => v.name)), env: new Set(hidden.map((v) => v.env ?? v.name)) };
}

/** The record without the hidden keys. */
export function withoutHidden<T>(values: Readonly<Record<string, T>>, hidden: ReadonlySet<string>): Record<string, T> {
  if (hidden.size === 0) return { ...values };
  return Object.fromEntries(Object.entries(values).filter(([k]) => !hidden.has(k)));
}

/** FORBIDDEN when `settings` names an operator-only variable and the principal is no operator. */
export function assertVariablesSettable(principal: PrincipalLike, template: TemplateSpec | undefined, settings: Readonly<Record<string, unknown>> | undefined): void {
  if (!settings || !template) return;
  if (isOperator(principal)) return;
  const locked = template.variables.filter((v) => v.operatorOnly && Object.hasOwn(settings, v.name)).map((v) => v.name);
  if (locked.length === 0) return;
  throw new AppError('FORBIDDEN', `token ${principal?.name ?? 'anonymous'} may not set ${locked.join(', ')}: operator-only variable${locked.length > 1 ? 's' : ''} of this template (needs ${OPERATOR_SCOPES.join('/')})`, {
    details: { variables: locked },
  });
}
