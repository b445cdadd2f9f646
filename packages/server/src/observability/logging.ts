import { createHmac, randomBytes } from "node:crypto";
import { pino, type DestinationStream, type LevelWithSilent, type LogFn, type Logger } from "pino";
import { secretKey } from "../crypto/secret-key.js";
import { AppError } from "../server/errors.js";
import { UNMATCHED_ROUTE } from "./metrics.js";

/*
 * The server's one logger factory: the HTTP server, `tessera serve` and every other CLI command that opens the
 * vault, the background work (invocation runner, webhook deliverer, audit sealer, expiry sweeper) and the tests all
 * log through `createLogger`, so what may reach a log line is decided here and nowhere else (docs/observability.md#logs).
 *
 * The rule is that a log line holds no value a client or reactor code chose: no token data, no key, no query
 * string, no path parameter, no header value, no error message and no field-error map. What it holds instead:
 * the route pattern, the status, the error's class, code and stack frames, and a keyed digest of the message so
 * that an operator can tell repeats of one failure apart from different ones without reading either.
 */

/**
 * Fields that hold secrets wherever they appear in a logged object, at the top level or one level down (pino
 * matches fixed depths). The serializers below already leave these out of the objects they build; redaction
 * catches any other object a future call site might log.
 */
const SENSITIVE_FIELDS = [
  "key",
  "data",
  "args",
  "configuration",
  "errors",
  "detail",
  "body",
  "query",
  "params",
  "headers",
];
export const REDACTED_LOG_PATHS: readonly string[] = [
  ...SENSITIVE_FIELDS,
  ...SENSITIVE_FIELDS.map((field) => `*.${field}`),
];

/** How many stack frames of an error are kept: enough to find the code, bounded per line. */
const MAX_FRAMES = 20;
/** How many causes deep an error's chain is followed. */
const MAX_CAUSE_DEPTH = 3;
/** base64url characters of the digest: 96 bits, and no run of decimal digits long enough to look like data. */
const DIGEST_LENGTH = 16;

/**
 * The logger every part of the server uses. `destination` defaults to stdout (pino's own); tests pass a sink.
 * Each logger has a random digest key of its own: digests correlate within one process's log, and cannot be
 * reversed by trying candidate card numbers, since the key never leaves memory.
 */
export function createLogger(level: LevelWithSilent, destination?: DestinationStream): Logger {
  const digest = messageDigest(randomBytes(32));
  const options = {
    level,
    redact: { paths: [...REDACTED_LOG_PATHS], censor: "[redacted]" },
    serializers: {
      req: serializeRequest,
      res: serializeReply,
      err: (error: unknown) => serializeError(error, digest, 0),
    },
    hooks: { logMethod },
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}

type Digest = (text: string) => string;

function messageDigest(key: Buffer): Digest {
  const keyObject = secretKey(key);
  return (text) => createHmac("sha256", keyObject).update(text).digest("base64url").slice(0, DIGEST_LENGTH);
}

interface LoggedRequest {
  readonly method?: string;
  /** The route's pattern (`/tokens/:id`), never the URL: paths carry token ids and aliases, queries anything. */
  readonly url: string;
  readonly remoteAddress?: string;
  readonly remotePort?: number;
}

/**
 * Fastify's request serializer without the URL, the Host and Accept-Version headers: the pattern of the matched
 * route stands for the URL, as in the metrics' `route` label. Fastify hands this its request; pino hands it a
 * raw IncomingMessage, which has no route.
 */
function serializeRequest(request: unknown): LoggedRequest {
  const r = request as {
    method?: unknown;
    ip?: unknown;
    routeOptions?: { url?: unknown };
    socket?: { remotePort?: unknown };
  };
  return {
    ...(typeof r.method === "string" && { method: r.method }),
    url: typeof r.routeOptions?.url === "string" ? r.routeOptions.url : UNMATCHED_ROUTE,
    ...(typeof r.ip === "string" && { remoteAddress: r.ip }),
    ...(typeof r.socket?.remotePort === "number" && { remotePort: r.socket.remotePort }),
  };
}

function serializeReply(reply: unknown): { statusCode?: number } {
  const statusCode = (reply as { statusCode?: unknown }).statusCode;
  return typeof statusCode === "number" ? { statusCode } : {};
}

export interface LoggedError {
  /** The class: `AppError`, `TypeError`, pg's `DatabaseError`, `SqliteError`, … */
  readonly type: string;
  /** AppError's catalog code, a Node/SQLite code (`ECONNREFUSED`, `SQLITE_BUSY`) or a PostgreSQL SQLSTATE. */
  readonly code?: string;
  readonly status?: number;
  /** A keyed digest of the message and (AppError) the detail and field errors: equal text, equal digest. */
  readonly digest: string;
  /** The stack's frames, without the message line(s) above them. */
  readonly stack?: string;
  /** PostgreSQL's names for what a statement ran into (identifiers from the schema, never values). */
  readonly table?: string;
  readonly column?: string;
  readonly constraint?: string;
  /** The failing system call of a Node system error (`connect`, `open`). */
  readonly syscall?: string;
  readonly cause?: LoggedError;
  /** The errors an AggregateError gathers (a connection to several addresses). */
  readonly aggregated?: LoggedError[];
}

const IDENTIFIER = /^[A-Za-z_$][\w$]{0,99}$/;
/** Codes set by Node, libraries and SQLite (`ERR_…`, `ECONNRESET`, `SQLITE_…`, `FST_…`) or a 5-character SQLSTATE. */
const ERROR_CODE = /^(?:[A-Z][A-Z0-9_]{1,63}|[0-9A-Z]{5})$/;

/**
 * pino's `err` serializer, rewritten so that no message reaches the log. A message is where a value ends up:
 * a reactor's `new Error("declined " + card)`, a formulas-SDK error's `errors`, a JSON parser quoting its input,
 * PostgreSQL's `detail` ("Key (id)=(…) already exists"), Node's HTTP parser keeping the raw request (API key
 * header included) in `rawPacket`. Only fields whose values come from code, not from data, are kept.
 */
export function serializeError(error: unknown, digest: Digest, depth: number): LoggedError {
  if (!(error instanceof Error)) {
    return { type: error === null ? "null" : typeof error, digest: digest(describeThrown(error)) };
  }
  const fields = error as unknown as Record<string, unknown>;
  const type = error.constructor?.name;
  const code = error instanceof AppError ? error.code : safeCode(fields.code);
  const status = error instanceof AppError ? error.status : (fields.statusCode ?? fields.status);
  const text =
    error instanceof AppError
      ? JSON.stringify([error.detail ?? null, error.errors ?? null])
      : String(error.message);
  const frames = (error.stack ?? "")
    .split("\n")
    .filter((line) => /^\s+at /.test(line))
    .slice(0, MAX_FRAMES);
  return {
    type: typeof type === "string" && IDENTIFIER.test(type) ? type : "Error",
    ...(code !== undefined && { code }),
    ...(typeof status === "number" && Number.isInteger(status) && { status }),
    digest: digest(text),
    ...(frames.length > 0 && { stack: frames.join("\n") }),
    ...identifiers(fields, ["table", "column", "constraint", "syscall"]),
    ...(error.cause !== undefined &&
      depth < MAX_CAUSE_DEPTH && { cause: serializeError(error.cause, digest, depth + 1) }),
    ...(error instanceof AggregateError &&
      depth < MAX_CAUSE_DEPTH && {
        aggregated: (error.errors as unknown[])
          .slice(0, 5)
          .map((each) => serializeError(each, digest, depth + 1)),
      }),
  };
}

function safeCode(code: unknown): string | undefined {
  return typeof code === "string" && ERROR_CODE.test(code) ? code : undefined;
}

function identifiers(fields: Record<string, unknown>, names: readonly string[]): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of names) {
    const value = fields[name];
    if (typeof value === "string" && IDENTIFIER.test(value)) kept[name] = value;
  }
  return kept;
}

function describeThrown(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * pino takes an error's message as the line's message when none is given (`log.error(err)`,
 * `log.error({ err })`): the error's class takes its place. Fastify writes the raw URL into a few messages of its
 * own (a reply sent twice, its default not-found line), so a query string in a message is cut off.
 */
function logMethod(this: Logger, args: Parameters<LogFn>, method: LogFn): void {
  const [first, ...rest] = args as unknown[];
  if (first instanceof Error) {
    return method.apply(this, [{ err: first }, ...messageOf(rest, first)] as Parameters<LogFn>);
  }
  if (typeof first === "string") {
    return method.apply(this, [withoutQuery(first), ...rest] as Parameters<LogFn>);
  }
  const err = (first as { err?: unknown } | null | undefined)?.err;
  if (typeof first === "object" && first !== null && err !== undefined) {
    return method.apply(this, [first, ...messageOf(rest, err)] as Parameters<LogFn>);
  }
  if (typeof rest[0] === "string") {
    return method.apply(this, [first, withoutQuery(rest[0]), ...rest.slice(1)] as Parameters<LogFn>);
  }
  return method.apply(this, args);
}

function messageOf(rest: unknown[], error: unknown): unknown[] {
  if (typeof rest[0] === "string") return [withoutQuery(rest[0]), ...rest.slice(1)];
  const type = error instanceof Error ? error.constructor?.name : undefined;
  return [typeof type === "string" && IDENTIFIER.test(type) ? type : "error"];
}

/** `/path?anything` → `/path?[redacted]`, wherever a URL appears in a message. */
function withoutQuery(message: string): string {
  return message.includes("?") ? message.replace(/(\/[^\s?#"'`]*)\?[^\s"'`]*/g, "$1?[redacted]") : message;
}
