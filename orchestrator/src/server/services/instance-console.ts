// One console command to an instance: over RCON when the template declares it
// (the answer is the server's reply), else written to the stdin of egg servers.
// The console route and the schedule runner's command tasks both call this.

import type { Host, Instance, TemplateSpec } from '../../domain/index.js';
import { AppError } from '../../shared/errors.js';
import { capability, type CallIds, type HostDriver } from '../drivers/host-driver.js';

export interface ConsoleDeps {
  host(id: string): Promise<Host | undefined>;
  templateOf(instance: Instance): Promise<TemplateSpec | undefined>;
  driver: HostDriver;
}

export async function sendConsoleCommand(
  deps: ConsoleDeps,
  instance: Instance,
  command: string,
  ids: CallIds = {},
): Promise<{ via: 'rcon' | 'stdin'; response: string | null }> {
  const template = await deps.templateOf(instance);
  if (!instance.hostId) throw new AppError('INSTANCE_NOT_RUNNING', `instance ${instance.name} is on no host yet`);
  const host = await deps.host(instance.hostId);
  if (!host) throw new AppError('HOST_NOT_FOUND', `host ${instance.hostId} of instance ${instance.name} is not known`);
  const rcon = template?.stop.rcon;
  const password = rcon ? instance.secretSettings[rcon.passwordVariable] : undefined;
  if (rcon && password) {
    const { response } = await capability(deps.driver.rcon, 'rcon', host).command(
      host,
      instance.id,
      { port: rcon.port, password, command },
      ids,
    );
    return { via: 'rcon', response };
  }
  if (template?.stdin) {
    await capability(deps.driver.eggs, 'stdin', host).stdin(host, instance.id, { line: command }, ids);
    return { via: 'stdin', response: null };
  }
  throw new AppError(
    'NOT_IMPLEMENTED',
    `template of instance ${instance.name} has neither RCON (stop.rcon) nor an open stdin (stdin: true): no console to send commands to`,
  );
}
