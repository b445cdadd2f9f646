import type { Outage, OutageReason } from "../storage/availability.js";

/**
 * The one error model (STYLE §6). Services throw AppError; one handler renders it as RFC 9457 problem+json.
 * The code→status map is exhaustive, so adding a code without a status does not compile.
 */
export type ErrorCode =
  | "validation-failed"
  | "malformed-request"
  | "unauthenticated"
  | "forbidden"
  | "not-found"
  | "conflict"
  | "request-timeout"
  | "payload-too-large"
  | "uri-too-long"
  | "unsupported-media-type"
  | "header-fields-too-large"
  | "rate-limited"
  | "internal"
  | "unavailable"
  | "store-unavailable"
  | "master-key-unavailable"
  | "overloaded"
  | "reactor-error"
  | "reactor-failed"
  | "reactor-timeout";

const CATALOG: Record<ErrorCode, { status: number; title: string }> = {
  "validation-failed": { status: 400, title: "Validation failed" },
  "malformed-request": { status: 400, title: "Malformed request" },
  unauthenticated: { status: 401, title: "Unauthenticated" },
  forbidden: { status: 403, title: "Forbidden" },
  "not-found": { status: 404, title: "Not found" },
  conflict: { status: 409, title: "Conflict" },
  // Refused by Node's HTTP parser before routing (server/client-error.ts), as are the 431s.
  "request-timeout": { status: 408, title: "Request timeout" },
  "payload-too-large": { status: 413, title: "Payload too large" },
  "uri-too-long": { status: 414, title: "URI too long" },
  "unsupported-media-type": { status: 415, title: "Unsupported media type" },
  "header-fields-too-large": { status: 431, title: "Request header fields too large" },
  // Sent with Retry-After (limits/).
  "rate-limited": { status: 429, title: "Too many requests" },
  internal: { status: 500, title: "Internal server error" },
  unavailable: { status: 503, title: "Service unavailable" },
  // The database is down, unreachable, locked or cannot write (storage/availability.ts); Retry-After when a
  // retry may succeed by itself.
  "store-unavailable": { status: 503, title: "Store unavailable" },
  // The HSM or KMS that holds the master key does not answer, and the tenant key needed is not in the cache
  // (keys/providers/custody.ts); sent with Retry-After.
  "master-key-unavailable": { status: 503, title: "Master key unavailable" },
  // Load shed: a concurrency queue is full or the process is saturated; sent with Retry-After (limits/).
  overloaded: { status: 503, title: "Server overloaded" },
  // Raised by reactor code itself (wire-format §7): the status is the one its error class carries.
  "reactor-error": { status: 500, title: "Reactor error" },
  "reactor-failed": { status: 500, title: "Reactor failed" },
  "reactor-timeout": { status: 504, title: "Reactor timed out" },
};

/**
 * What a caller is told about an outage: enough to know to retry, nothing of where the database is or who the
 * server logs in as (the log has that).
 */
const PUBLIC_OUTAGE: Record<OutageReason, string> = {
  refused: "the database cannot be reached",
  unreachable: "the database cannot be reached",
  timeout: "the database cannot be reached",
  dns: "the database cannot be reached",
  auth: "the database cannot be reached",
  tls: "the database cannot be reached",
  shutdown: "the database cannot be reached",
  busy: "the database is busy",
  "disk-full": "the database cannot accept writes",
  "read-only": "the database cannot accept writes",
};

export type FieldErrors = Record<string, string[]>;

export class AppError extends Error {
  readonly status: number;
  readonly title: string;
  /** Sent as `Retry-After` (seconds) by the error handler: when a refused request may be tried again. */
  retryAfterSeconds?: number;

  constructor(
    readonly code: ErrorCode,
    readonly detail?: string,
    readonly errors?: FieldErrors,
    /** Only for `reactor-error`, whose status the reactor's error class chooses. */
    status?: number,
  ) {
    super(detail ?? CATALOG[code].title);
    this.name = "AppError";
    this.status = code === "reactor-error" && status !== undefined ? status : CATALOG[code].status;
    this.title = CATALOG[code].title;
  }

  /** The store cannot serve: the problem says so (never where it is), and when to retry if that may help. */
  static storeUnavailable(outage: Outage): AppError {
    const seconds = outage.retryAfterSeconds;
    const retry = seconds === undefined ? "" : ` Retry after ${seconds} s.`;
    const error = new AppError(
      "store-unavailable",
      `The vault's store is unavailable: ${PUBLIC_OUTAGE[outage.reason]}.${retry}`,
    );
    if (seconds !== undefined) error.retryAfterSeconds = seconds;
    return error;
  }

  /** A 429 from a service, which knows no HTTP: the error handler turns `retryAfterSeconds` into the header. */
  static rateLimited(detail: string, retryAfterSeconds: number): AppError {
    const error = new AppError("rate-limited", detail);
    error.retryAfterSeconds = retryAfterSeconds;
    return error;
  }

  static validation(errors: FieldErrors, detail = "The request has invalid fields; see errors."): AppError {
    return new AppError("validation-failed", detail, errors);
  }

  static notFound(what: string): AppError {
    return new AppError("not-found", `${what} was not found`);
  }

  static forbidden(detail: string): AppError {
    return new AppError("forbidden", detail);
  }
}

/** The catalog code for a 4xx/5xx status raised by the framework itself (body parsing, routing). */
export function codeForStatus(status: number): ErrorCode {
  const match = (Object.keys(CATALOG) as ErrorCode[]).find((code) => CATALOG[code].status === status);
  if (match !== undefined && match !== "validation-failed" && !match.startsWith("reactor-")) return match;
  return status >= 500 ? "internal" : "malformed-request";
}

export const PROBLEM_TYPE_BASE = "urn:tessera:problem:";

export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail?: string;
  instance?: string;
  errors?: FieldErrors;
}

export function toProblem(error: AppError, instance: string | undefined): ProblemDetails {
  return {
    type: PROBLEM_TYPE_BASE + error.code,
    title: error.title,
    status: error.status,
    ...(error.detail !== undefined && { detail: error.detail }),
    ...(instance !== undefined && { instance }),
    ...(error.errors !== undefined && { errors: error.errors }),
  };
}

/**
 * Adds a message under a field that may be named by the client. Own-property checks and defineProperty keep
 * names like `constructor` or `__proto__` from reaching Object.prototype.
 */
export function addError(errors: FieldErrors, field: string, message: string): void {
  if (!Object.hasOwn(errors, field)) {
    Object.defineProperty(errors, field, { value: [], enumerable: true, writable: true, configurable: true });
  }
  const list = errors[field]!;
  if (!list.includes(message)) list.push(message);
}
