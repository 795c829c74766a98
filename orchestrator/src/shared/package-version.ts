// The package version every command reports (agent heartbeat and /health,
// orchestrator, ectl --version): read once from package.json.

import { readFileSync } from 'node:fs';

/**
 * The `endercloud` package's version, from src/shared (tsx) or dist/src/shared
 * (the compiled image); '0.0.0' when no package.json can be read.
 */
export function packageVersion(): string {
  for (const relative of ['../../package.json', '../../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'endercloud' && pkg.version) return pkg.version;
    } catch {
      /* try the next location */
    }
  }
  return '0.0.0';
}
