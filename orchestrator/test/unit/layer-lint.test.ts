// The layer boundaries of docs/architecture.md "Boundaries" are lint rules
// (eslint.config.js); this checks that the rules really fire, on code placed
// where a breach would be: domain/ reaching up, a route importing the store.

import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint();

async function restrictedImports(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('layer boundaries', () => {
  it.each([
    ["import type { ScalingPolicy } from '../provisioning/scaling-policy.js';"],
    ["import type { BackupPolicy } from '../contracts/backup-policy.js';"],
    ["export type { IdleTier } from '../provisioning/index.js';"],
    ["import { AppError } from '../shared/errors.js';"],
  ])('domain/ may not import upward: %s', async (line) => {
    const found = await restrictedImports('src/domain/lint-probe.ts', `${line}\nexport const probe = 1;\n`);
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('domain/ is the ground layer');
  });

  it('domain/ may import from itself', async () => {
    expect(
      await restrictedImports('src/domain/lint-probe.ts', "import type { EpochMs } from './common.js';\nexport type T = EpochMs;\n"),
    ).toEqual([]);
  });

  it('routes may not import the store', async () => {
    const found = await restrictedImports(
      'src/server/routes/lint-probe.ts',
      "import type { Store } from '../../store/context.js';\nexport type T = Store;\n",
    );
    expect(found).toHaveLength(1);
    expect(found[0]).toContain('Routes call services');
  });
});
