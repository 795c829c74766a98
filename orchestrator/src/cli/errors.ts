// ectl's error kinds and their exit codes: 1 for API and runtime failures,
// 2 for usage errors (bad flags, bad files, missing configuration).

export type CliErrorKind = 'usage' | 'api' | 'runtime';

export class CliError extends Error {
  constructor(
    readonly kind: CliErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }

  get exitCode(): number {
    return this.kind === 'usage' ? 2 : 1;
  }
}

/** An error answer of the orchestrator API: `{"error":{"code","message"}}`. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly apiMessage: string,
  ) {
    super('api', `${code}: ${apiMessage} (HTTP ${status})`);
    this.name = 'ApiError';
  }
}
