import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/shared/package-version.js';

describe('packageVersion', () => {
  it('reports the version of the endercloud package.json', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(packageVersion()).toBe(pkg.version);
  });
});
