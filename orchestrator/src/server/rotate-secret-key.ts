// Entry point of `npm run secret-key:rotate -- --new-key-file FILE` (in the
// image: `node dist/src/server/rotate-secret-key.js --new-key-file FILE`):
// with every replica stopped, re-seals every secret setting from the current
// master key (the orchestrator's own configuration: ENDERCLOUD_SECRET_KEY,
// ENDERCLOUD_SECRET_KEY_FILE or <dataDir>/secret-key) to the key in FILE and
// records its fingerprint, in one transaction. The operator then gives every
// replica the new key (docs/production.md "Secret key").

import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadOrExit } from '../shared/config.js';
import { openStore } from '../store/open-store.js';
import { loadOrchestratorConfig, processEnv } from './config.js';
import { RECONCILER_LEASE } from './leadership/leader-lease.js';
import { loadMasterKey, parseMasterKey, SECRET_KEY_FILE } from './secrets/master-key.js';
import { rotateSecretKey } from './secrets/secret-settings.js';

const PROGRAM = 'secret-key:rotate';
const USAGE = `usage: ${PROGRAM} --new-key-file FILE   (FILE: base64 of 32 random bytes, e.g. openssl rand -base64 32 > FILE)`;

async function main(): Promise<void> {
  let newKeyFile: string | undefined;
  try {
    newKeyFile = parseArgs({ options: { 'new-key-file': { type: 'string' } }, strict: true }).values['new-key-file'];
  } catch (err) {
    fail(`${(err as Error).message}\n${USAGE}`);
  }
  if (!newKeyFile) fail(`--new-key-file is required\n${USAGE}`);
  const config = loadOrExit(() => loadOrchestratorConfig(processEnv()), PROGRAM);
  const defaultFile = path.join(config.dataDir, SECRET_KEY_FILE);
  // The current key must exist: generating one here would name a key nothing was sealed under.
  if (config.secretKey === undefined && config.secretKeyFile === undefined && !existsSync(defaultFile))
    fail(`no current key: ENDERCLOUD_SECRET_KEY and ENDERCLOUD_SECRET_KEY_FILE are unset and ${defaultFile} does not exist`);
  const current = await loadMasterKey({ key: config.secretKey, keyFile: config.secretKeyFile, dataDir: config.dataDir });
  const text = await readFile(newKeyFile, 'utf8').catch((err: NodeJS.ErrnoException) =>
    fail(`--new-key-file: cannot read ${newKeyFile} (${err.code ?? err.message})`),
  );
  const next = parseMasterKey(text, `--new-key-file ${newKeyFile}`);
  const store = await openStore(config.databaseUrl, config.dataDir, {
    connectTimeoutMs: config.databaseConnectTimeoutMs,
    statementTimeoutMs: config.databaseStatementTimeoutMs,
  });
  try {
    const result = await rotateSecretKey(store, current, next, { now: Date.now(), leaseName: RECONCILER_LEASE });
    process.stdout.write(
      `${PROGRAM}: re-sealed the secret settings of ${result.instances} instance(s) from key ${result.from} (${current.source}) to key ${result.to}.\n` +
        `Now give every replica the new key (ENDERCLOUD_SECRET_KEY, ENDERCLOUD_SECRET_KEY_FILE, or replace ${defaultFile}) and start them; ` +
        'a replica started with the old key refuses to start.\n',
    );
  } finally {
    await store.close();
  }
}

function fail(message: string): never {
  process.stderr.write(`${PROGRAM}: ${message}\n`);
  process.exit(2);
}

main().catch((err: unknown) => {
  process.stderr.write(`${PROGRAM}: failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
