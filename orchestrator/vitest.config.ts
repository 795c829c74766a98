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
    // Orchestrators started by tests (in-process or as child processes that inherit this environment)
    // never take the default SFTP port 2022: two at once would collide. SFTP tests bind port 0 themselves.
    env: { ENDERCLOUD_SFTP_PORT: '0' },
  },
});
