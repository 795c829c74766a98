// An egg template's install script on the instance's host (create and reinstall
// run this one function): its own container as root, the instance's memory and
// CPU limits, the template's time limit; a failure (exit ≠ 0, timeout) fails the
// command with the script's last lines.

import type { Host, InstallSpec } from '../../domain/index.js';
import type { CreateInstanceBody } from '../../contracts/agent-api.js';
import { AppError } from '../../shared/errors.js';
import type { CallIds, HostEggs } from '../drivers/host-driver.js';

/** The last lines of an install script's output kept in the history. */
const INSTALL_TAIL_LINES = 10;

/** Runs the script; answers the history note (`; install script finished in …, last lines: …`). */
export async function runInstallScript(
  eggs: HostEggs,
  host: Host,
  instanceId: string,
  install: InstallSpec,
  body: Pick<CreateInstanceBody, 'env' | 'resources'>,
  ids: CallIds,
): Promise<string> {
  const answer = await eggs.install(
    host,
    instanceId,
    {
      image: install.image,
      entrypoint: install.entrypoint,
      script: install.script,
      timeoutMs: install.timeoutMs,
      env: body.env ?? {},
      memoryMb: body.resources.memoryMb,
      ...(body.resources.cpus ? { cpus: body.resources.cpus } : {}),
    },
    ids,
  );
  const tail = answer.output.trimEnd().split('\n').slice(-INSTALL_TAIL_LINES).join('\n');
  // Final although the codes are retryable: the install script ran and failed; running it again would fail the same way.
  if (answer.timedOut)
    throw new AppError('TIMEOUT', `install script did not finish within ${install.timeoutMs} ms and was killed; last lines:\n${tail}`, {
      retryable: false,
    });
  if (answer.exitCode !== 0)
    throw new AppError('UPSTREAM_FAILED', `install script exited ${answer.exitCode ?? 'without a code'}; last lines:\n${tail}`, {
      retryable: false,
    });
  return `; install script finished in ${Math.round(answer.durationMs / 100) / 10} s, last lines:\n${tail}`;
}
