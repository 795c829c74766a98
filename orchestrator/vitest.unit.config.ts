// `npm run test:unit`: the pure table tests of test/unit, without the global
// setup (it needs the Docker engine and builds the test images), so they run on a
// machine with no Docker at all. Everything else is the whole suite's config.

import { defineConfig } from 'vitest/config';
import suite from './vitest.config.js';

export default defineConfig({
  ...suite,
  test: { ...suite.test, include: ['test/unit/**/*.test.ts'], globalSetup: [] },
});
