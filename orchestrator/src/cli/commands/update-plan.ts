// Prints the update plan of GET /instances/:id/update-plan (images, checks,
// changes, warnings) before ectl asks to apply it.

import type { Output } from '../output.js';
import { formatBytes } from '../table.js';

export interface UpdatePlanView {
  instanceId: string;
  name: string;
  state: string;
  current: { ref: string; id?: string };
  candidate: { ref: string; id?: string };
  sameImage: boolean;
  compatible: boolean;
  checks: { name: string; ok: boolean; detail: string }[];
  changes: string[];
  warnings: string[];
  diskFreeBytes: number | null;
}

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
