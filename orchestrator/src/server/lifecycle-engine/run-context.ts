// What the action worker hands every step of one durable command: the command,
// the instance's host and template, the ids for the agent calls, the actor and
// a logger bound to them.

import type { Command, Host, TemplateSpec } from '../../domain/index.js';
import type { Logger } from '../../shared/logger.js';
import type { CallIds } from '../drivers/host-driver.js';

export interface RunContext {
  cmd: Command;
  host: Host;
  template: TemplateSpec | undefined;
  ids: CallIds;
  actor: string;
  log: Logger;
}
