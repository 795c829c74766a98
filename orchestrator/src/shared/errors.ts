// One catalogue of stable error codes, shared by the agent, the orchestrator and
// the router. Domain code throws AppError subclasses; one place per HTTP server
// maps them to `{"error":{"code","message"}}` (src/shared/http.ts errorHandler).

export const ERROR_CATALOGUE = {
  BAD_REQUEST: 400,
  PROTOCOL_ERROR: 400,
  VALIDATION_FAILED: 400,
  INVALID_ID: 400,
  INVALID_ARCHIVE: 422,
  CHECKSUM_MISMATCH: 422,
  ARCHIVE_TOO_LARGE: 413,
  /** A request body past the server's body limit (the message names the limit). */
  BODY_TOO_LARGE: 413,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  /** Too many failed authentications from one client address (the answer carries Retry-After, in seconds). */
  RATE_LIMITED: 429,
  NOT_FOUND: 404,
  INSTANCE_NOT_FOUND: 404,
  HOST_NOT_FOUND: 404,
  LAYER_NOT_FOUND: 404,
  TEMPLATE_NOT_FOUND: 404,
  GROUP_NOT_FOUND: 404,
  COMMAND_NOT_FOUND: 404,
  IMAGE_NOT_FOUND: 404,
  CONFLICT: 409,
  INSTANCE_BUSY: 409,
  INSTANCE_CONFLICT: 409,
  INSTANCE_NOT_RUNNING: 409,
  IMMUTABLE: 409,
  MAINTENANCE: 409,
  INVALID_TRANSITION: 409,
  /** A start found the container's host port held outside the container runtime (the orchestrator re-creates it on another port). */
  HOST_PORT_TAKEN: 409,
  /** A mutating agent call carried an older leader epoch than one the agent has seen (a deposed orchestrator). */
  STALE_LEADER: 409,
  CAP_REACHED: 409,
  /** A start of an instance whose template needs the Minecraft EULA accepted (variable EULA) while it is not. */
  EULA_NOT_ACCEPTED: 409,
  /** Nothing in a group can take a player or an allocation now, and nothing may be spawned. */
  CAPACITY_EXHAUSTED: 409,
  CONFIRMATION_REQUIRED: 400,
  UNSAFE_PATH: 400,
  /** The files API (instance data directory): a path with `..`, NUL, a control character, or one that crosses a symlink. */
  FILE_PATH_INVALID: 400,
  FILE_IS_DIRECTORY: 400,
  FILE_NOT_FOUND: 404,
  FILE_EXISTS: 409,
  FILE_TOO_LARGE: 413,
  // The template's file denylist (egg `file_denylist`) covers the path: the files API and SFTP refuse it.
  FILE_DENIED: 403,
  PORT_RANGE_EXHAUSTED: 503,
  NO_CAPACITY: 503,
  HOST_UNAVAILABLE: 503,
  /** The store's database did not answer (readiness: GET /api/v1/ready). */
  DATABASE_UNAVAILABLE: 503,
  UPSTREAM_FAILED: 502,
  RCON_AUTH_FAILED: 502,
  DOCKER_ERROR: 502,
  IMAGE_PULL_FAILED: 502,
  TIMEOUT: 504,
  OWNERSHIP_FAILED: 500,
  /** Accepted vocabulary this version or this host's driver cannot act on yet. */
  NOT_IMPLEMENTED: 501,
  INTERNAL: 500,
} as const;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;

/**
 * The codes a later attempt of the same call may cure — the network or a
 * peer came back, a busy engine or instance finished, capacity was freed, a
 * deposed leader's successor resends. An AppError of one of these is
 * retryable unless the site that throws it says otherwise (AppErrorOptions
 * `retryable`, with a comment saying why); every other code is final for a
 * retry loop (the command worker, docs/orchestrator.md "Placement and commands").
 */
const RETRYABLE_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'UPSTREAM_FAILED',
  'TIMEOUT',
  'DATABASE_UNAVAILABLE',
  'HOST_UNAVAILABLE',
  'NO_CAPACITY',
  'PORT_RANGE_EXHAUSTED',
  'INSTANCE_BUSY',
  'STALE_LEADER',
  'DOCKER_ERROR',
  'IMAGE_PULL_FAILED',
]);

/** Whether an error of `code` is retryable when its site does not say. */
export function retryableByDefault(code: ErrorCode): boolean {
  return RETRYABLE_CODES.has(code);
}

export interface AppErrorOptions {
  /** Overrides the code's default (retryableByDefault) where this site truly differs; say why beside it. */
  retryable?: boolean;
  /**
   * A 5xx a retry cannot cure (a pull the registry refused for good): the
   * answer says `"retryable": false`, so a caller that retries 5xx by status
   * (the orchestrator's agent driver) gives up at once.
   */
  final?: boolean;
  cause?: unknown;
  details?: Record<string, unknown>;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly retryable: boolean;
  readonly final: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.final = options.final === true;
    this.retryable = !this.final && (options.retryable ?? retryableByDefault(code));
    this.details = options.details;
  }

  get httpStatus(): number {
    return ERROR_CATALOGUE[this.code];
  }
}

export function isAppError(err: unknown): err is AppError {
  return err instanceof AppError;
}

/** The JSON body every EnderCloud HTTP API answers an error with. */
export interface ErrorBody {
  /** `retryable: false` only on a final error (AppErrorOptions.final); absent otherwise. */
  error: { code: string; message: string; details?: Record<string, unknown>; retryable?: false };
}

export function errorBody(err: AppError): ErrorBody {
  const body: ErrorBody = { error: { code: err.code, message: err.message } };
  if (err.details) body.error.details = err.details;
  if (err.final) body.error.retryable = false;
  return body;
}
