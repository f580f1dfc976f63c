/**
 * Typed errors. Every failure a user can cause or meet carries a stable `code`
 * (tests assert on it), a one-line message and a hint saying what to do next.
 * Only the CLI renders these; wire errors (JSON-RPC) are built in proxy/jsonrpc.ts.
 */
export type ErrorCode =
  | "INVALID_OPTION"
  | "MISSING_OPTION"
  | "CONFLICTING_OPTIONS"
  | "NOT_SUPPORTED_YET"
  | "INVALID_ARGUMENT"
  | "PORT_IN_USE"
  | "LISTEN_FAILED"
  | "UPSTREAM_UNREACHABLE"
  | "REMOTE_REDIRECT"
  | "STATE_CORRUPT"
  | "STATE_LOCKED"
  | "STATE_IO"
  | "STATE_UNSAFE"
  | "WORKLOAD_EXISTS"
  | "WORKLOAD_NOT_FOUND"
  | "WORKLOAD_NOT_RUNNING"
  | "WORKLOAD_ENDED_DURING_REQUEST"
  | "WORKLOAD_GUARDED"
  | "WORKLOADS_FAILED"
  | "GROUP_EXISTS"
  | "GROUP_NOT_FOUND"
  | "GROUP_NOT_EMPTY"
  | "GATEWAY_NOT_RUNNING"
  | "GATEWAY_AMBIGUOUS"
  | "GATEWAY_KEY_CORRUPT"
  | "SECRET_NOT_FOUND"
  | "SECRET_IN_USE"
  | "SECRETS_PASSWORD_MISSING"
  | "SECRETS_PASSWORD_WRONG"
  | "SECRETS_FILE_CORRUPT"
  | "SECRETS_READ_ONLY"
  | "SECRETS_STORE_FAILED"
  | "CANCELLED"
  | "REGISTRY_FILE_NOT_FOUND"
  | "REGISTRY_UNREACHABLE"
  | "REGISTRY_INVALID"
  | "REGISTRY_ENTRY_NOT_FOUND"
  | "REGISTRY_PERMISSION_REFUSED"
  | "SANDBOX_UNAVAILABLE"
  | "UNSAFE_MOUNT"
  | "TOOLCHAIN_MISSING"
  | "SERVER_FAILED"
  | "RUNTIME_UNAVAILABLE"
  | "IMAGE_PULL_FAILED"
  | "IMAGE_BUILD_FAILED"
  | "IMAGE_UNVERIFIED"
  | "CONTAINER_FAILED"
  | "AUTH_SETUP_FAILED"
  | "CEDAR_EVALUATOR_UNAVAILABLE"
  | "OUTPUT_FAILED"
  | "INTERNAL";

/** Exit code 2 means "you asked for something invalid"; 1 means "it failed". */
const usageCodes: ReadonlySet<ErrorCode> = new Set([
  "INVALID_OPTION",
  "MISSING_OPTION",
  "CONFLICTING_OPTIONS",
  "NOT_SUPPORTED_YET",
  "INVALID_ARGUMENT",
  "REGISTRY_PERMISSION_REFUSED",
]);

export class McpmgrError extends Error {
  readonly code: ErrorCode;
  readonly hint: string | undefined;
  readonly exitCode: number;
  /**
   * Text from elsewhere that explains the error (a server's last output), printed as indented
   * lines below the error line, so the line and its hint stay together whatever it holds.
   */
  readonly details: string | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { hint?: string; cause?: unknown; exitCode?: number; details?: string } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "McpmgrError";
    this.code = code;
    this.hint = options.hint;
    this.exitCode = options.exitCode ?? (usageCodes.has(code) ? 2 : 1);
    this.details = options.details;
  }
}

export function isMcpmgrError(err: unknown): err is McpmgrError {
  return err instanceof McpmgrError;
}

/** The message of anything thrown (an Error's message, else the value as text), for one-line reports. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
