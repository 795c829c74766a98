// Operator-only and hidden template variables (egg `user_editable: false`,
// `user_viewable: false`), pure: a narrow token (`instances:write`,
// `groups:write`) may not set an operator-only or hidden one on any path, nor
// see the value of a hidden one; operators may.

import type { TemplateSpec, VariableSpec } from '../domain/template.js';
import { AppError } from '../shared/errors.js';

const OPERATOR_SCOPES: readonly string[] = ['admin', 'manager', 'operator'];
const SCOPES_TEXT = 'admin, manager or operator';

/** Who sets or reads values: a token's name and scopes (undefined: anonymous). */
export type Requester = { name: string; scopes: readonly string[] } | undefined;

const isOperator = (principal: Requester): boolean => (principal?.scopes ?? []).some((s) => OPERATOR_SCOPES.includes(s));

/** Names whose values a reader may not see: settings keys (variable names) and the env names they are passed as. */
export interface HiddenValues {
  settings: ReadonlySet<string>;
  env: ReadonlySet<string>;
}

export const NOTHING_HIDDEN: HiddenValues = { settings: new Set(), env: new Set() };

/** What `principal` may not see of an instance of `template`: its hidden variables, unless the principal is an operator. */
export function hiddenFrom(principal: Requester, template: TemplateSpec | undefined): HiddenValues {
  const hidden = (template?.variables ?? []).filter((v) => v.hidden === true);
  if (hidden.length === 0 || isOperator(principal)) return NOTHING_HIDDEN;
  return { settings: new Set(hidden.map((v) => v.name)), env: new Set(hidden.map((v) => v.env ?? v.name)) };
}

/** The record without the hidden keys. */
export function withoutHidden<T>(values: Readonly<Record<string, T>>, hidden: ReadonlySet<string>): Record<string, T> {
  if (hidden.size === 0) return { ...values };
  return Object.fromEntries(Object.entries(values).filter(([k]) => !hidden.has(k)));
}

/** Variable values a request sets: settings and secrets by variable name, env entries (a group variant's) by the name a variable is passed as. */
export interface SetValues {
  settings?: Readonly<Record<string, unknown>> | undefined;
  secrets?: Readonly<Record<string, unknown>> | undefined;
  env?: Readonly<Record<string, unknown>> | undefined;
}

/** A hidden variable is operator-only too: a value one may not read back is no value one may set. */
const isOperatorOnly = (v: VariableSpec): boolean => v.operatorOnly === true || v.hidden === true;

/**
 * The one rule for every path that sets a variable value (create, PATCH settings, a group
 * variant's env that spawns and allocations create from, `ectl apply`): FORBIDDEN when `values`
 * set an operator-only or hidden variable and the principal is no operator. `where` names the
 * request field in the message (e.g. `body/variants/0/env`).
 */
export function assertVariablesSettable(principal: Requester, template: TemplateSpec | undefined, values: SetValues, where?: string): void {
  if (!template || isOperator(principal)) return;
  const sets = (v: VariableSpec): boolean =>
    [values.settings, values.secrets].some((given) => given !== undefined && Object.hasOwn(given, v.name)) ||
    (values.env !== undefined && Object.hasOwn(values.env, v.env ?? v.name));
  const locked = template.variables.filter((v) => isOperatorOnly(v) && sets(v));
  if (locked.length === 0) return;
  const names = locked.map((v) => (values.env && v.env && v.env !== v.name ? `${v.name} (env ${v.env})` : v.name));
  const plural = locked.length > 1 ? 's' : '';
  throw new AppError(
    'FORBIDDEN',
    `${where ? `${where}: ` : ''}token ${principal?.name ?? 'anonymous'} may not set ${names.join(', ')}: operator-only variable${plural} of this template (needs scope ${SCOPES_TEXT})`,
    {
      details: { variables: locked.map((v) => v.name), requiredScopes: [...OPERATOR_SCOPES] },
    },
  );
}
