// What the command worker runs: one handler per command kind. Instance
// actions, creation and host cleanup are all handlers of this one shape, so a
// new kind of durable work (spawn, despawn, archive) is a new entry, not a
// new pipeline.

import { isCommandKind, type Command, type CommandKind, type Host, type JsonObject } from '../../domain/index.js';
import type { Logger } from '../../shared/logger.js';

export interface CommandHandler {
  /** Runs one claimed command against its host; the answer is recorded as the command's result. */
  run(cmd: Command, host: Host, log: Logger): Promise<JsonObject>;
  /** The last attempt failed: leave a visible state and free the instance for the next action. */
  failedForGood(cmd: Command, message: string): Promise<void>;
}

export type CommandHandlers = Readonly<Record<CommandKind, CommandHandler>>;

/**
 * The kind a stored command runs as. Commands persisted before the pipeline was
 * one (kind `action`, the action in the payload) run as that action; a kind
 * this version does not know is undefined and fails by name.
 */
export function commandKindOf(cmd: Pick<Command, 'kind' | 'payload'>): CommandKind | undefined {
  const kind = cmd.kind === 'action' && typeof cmd.payload.action === 'string' ? cmd.payload.action : cmd.kind;
  return isCommandKind(kind) ? kind : undefined;
}
