// Entry point of `npm run orchestrator`: parse the configuration, start the
// control plane, say where the API and the admin token are, stop on SIGTERM/SIGINT.

import path from 'node:path';
import { loadOrExit } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { loadOrchestratorConfig, processEnv } from './config.js';
import { startOrchestrator } from './orchestrator.js';
import { exitOnSignals } from '../shared/shutdown.js';

async function main(): Promise<void> {
  const config = loadOrExit(() => loadOrchestratorConfig(processEnv()), 'orchestrator');
  const logger = createLogger('orchestrator', config.logLevel);
  if (config.agentToken === undefined) {
    logger.warn(
      'ENDERCLOUD_AGENT_TOKEN is not set: heartbeats of agents that are not enrolled are accepted without authentication and they cannot download layers; enrol agents with a join token (ectl hosts join-token create), or set it (the legacy shared AGENT_TOKEN) outside a trusted network',
    );
  }
  const o = await startOrchestrator(config, { logger });
  const tokenNote =
    o.adminToken.source === 'preset'
      ? 'ENDERCLOUD_ADMIN_TOKEN (preset)'
      : o.adminToken.file
        ? path.resolve(o.adminToken.file)
        : 'an existing admin token';
  logger.info({ url: o.url, publicUrl: o.publicUrl, database: o.store.dialect, adminToken: tokenNote }, 'orchestrator listening');
  const sftpNote = o.sftp ? ` — SFTP ${o.sftp.host}:${o.sftp.port}` : '';
  process.stdout.write(`EnderCloud orchestrator: API ${o.publicUrl}/api/v1${sftpNote} — admin token: ${tokenNote}\n`);

  exitOnSignals(logger, 'orchestrator', () => o.stop());
}

main().catch((err: unknown) => {
  process.stderr.write(`orchestrator: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
