// Operator-only template variables (egg `user_editable: false`), pure: a
// narrow token (`instances:write`) may not set them; operators may.

import type { TemplateSpec } from '../domain/template.js';
import { AppError } from '../shared/errors.js';

const OPERATOR_SCOPES: readonly string[] = ['admin', 'manager', 'operator'];

/** FORBIDDEN when `settings` names an operator-only variable and the principal is no operator. */
export function assertVariablesSettable(principal: { name: string; scopes: readonly string[] } | undefined, template: TemplateSpec | undefined, settings: Readonly<Record<string, unknown>> | undefined): void {
  if (!settings || !template) return;
  if ((principal?.scopes ?? []).some((s) => OPERATOR_SCOPES.includes(s))) return;
  const locked = template.variables.filter((v) => v.operatorOnly && Object.hasOwn(settings, v.name)).map((v) => v.name);
  if (locked.length === 0) return;
  throw new AppError('FORBIDDEN', `token ${principal?.name ?? 'anonymous'} may not set ${locked.join(', ')}: operator-only variable${locked.length > 1 ? 's' : ''} of this template (needs ${OPERATOR_SCOPES.join('/')})`, {
    details: { variables: locked },
  });
}
