#!/usr/bin/env node
// Runs ectl's TypeScript entry through tsx (registered as an ESM loader), so the
// package needs no build step: `npx ectl --help` works after `npm ci`.
import { register } from 'tsx/esm/api';

register();
await import(new globalThis.URL('../src/cli/index.ts', import.meta.url).href);
