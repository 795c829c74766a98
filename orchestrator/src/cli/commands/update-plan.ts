// Prints the update plan of GET /instances/:id/update-plan (images, checks,
// changes, warnings) before ectl asks to apply it.

import type { UpdatePlanAnswer } from '../../contracts/public-api/answers.js';
import type { Output } from '../output.js';
import { formatBytes } from '../table.js';

/** What ectl reads of the plan (the orchestrator sends more). */
export type UpdatePlanView = UpdatePlanAnswer;

export function printUpdatePlan(out: Output, plan: UpdatePlanView): void {
  out.line(`update plan for ${plan.name} (${plan.instanceId}, ${plan.state})`);
  out.line(`  current:   ${plan.current.ref}`);
  out.line(`  candidate: ${plan.candidate.ref}${plan.sameImage ? ' (same content)' : ''}`);
  out.line('checks:');
  for (const c of plan.checks) out.line(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name}: ${c.detail}`);
  out.line('changes:');
  for (const c of plan.changes) out.line(`  ~ ${c}`);
  if (plan.warnings.length > 0) {
    out.line('warnings:');
    for (const w of plan.warnings) out.line(`  ! ${w}`);
  }
  if (plan.diskFreeBytes !== null) out.line(`disk free on the host: ${formatBytes(plan.diskFreeBytes)}`);
  out.line(plan.compatible ? 'compatible: yes' : 'compatible: NO');
}
