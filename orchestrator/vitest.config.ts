import { defineConfig } from 'vitest/config';

// Docker-heavy suites share one engine on a 2-core machine: at most two test
// files run at once, and each file cleans up its containers by label.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 60_000,
    hookTimeout: 180_000,
    reporters: ['default'],
  },
});
