import { TesseraConnectionError, TesseraError } from "@tessera/sdk";
import { printable } from "./output/table.js";

/**
 * Exit codes scripts can rely on (docs/cli.md). 3 and 4 let a script tell "try again later" from "fix the
 * request"; 69 and 78 are sysexits' EX_UNAVAILABLE and EX_CONFIG, which a supervisor tells apart the same way
 * for the server's own database and for its master key's HSM or KMS. 80 to 84 are a master key that cannot be
 * used, one code per thing to fix (docs/keys.md#start-up-checks).
 */
export const EXIT = {
  ok: 0,
  failure: 1,
  usage: 2,
  unreachable: 3,
  refused: 4,
  unavailable: 69,
  config: 78,
  masterKeyModule: 80,
  masterKeyToken: 81,
  masterKeyLogin: 82,
  masterKeyLabel: 83,
  masterKeyMismatch: 84,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The command line is wrong: an unknown command or flag, a missing or malformed argument. */
export class UsageError extends Error {
  /** The command whose `--help` explains the right usage, e.g. `tessera tokens search`. */
  readonly command: string;

  constructor(message: string, command = "tessera") {
    super(message);
    this.name = "UsageError";
    this.command = command;
  }
}

/** The environment (or the flags standing in for it) is incomplete or invalid: no API key, a bad URL, a bad server config. */
export class ConfigurationError extends Error {
  override name = "ConfigurationError";
}

/**
 * The server's database could not be used at start, for a reason that may pass by itself (down, restarting,
 * busy): a supervisor may start the command again later.
 */
export class StoreUnavailable extends Error {
  override name = "StoreUnavailable";
}

/** A failure the message fully explains (a failed migration, a port in use). */
export class CommandFailure extends Error {
  override name = "CommandFailure";
}

/**
 * The server's master key cannot be used at start (a module that does not load, no such token, a PIN refused, no
 * such key, not the key of this store): the exit code says which, the message names it.
 */
export class MasterKeyRefused extends Error {
  override name = "MasterKeyRefused";

  constructor(
    message: string,
    readonly code: ExitCode,
  ) {
    super(message);
  }
}

/**
 * Input refused for what it holds: by the CLI itself, for the reason the server would refuse it (a line of an
 * import file that is not a JSON object), or by the server, restated against the input (a reactor's code file, by
 * line and column).
 */
export class BadInput extends Error {
  override name = "BadInput";
}

/**
 * A reactor answered with a response of its own (CustomHttpResponseError) outside 2xx: its status and JSON body,
 * not a problem of the server's.
 */
export class ReactorResponse extends Error {
  readonly status: number;
  readonly body: unknown;

  constructor(status: number, body: unknown) {
    super(`the reactor answered ${status}`);
    this.name = "ReactorResponse";
    this.status = status;
    this.body = body;
  }
}

/**
 * A wait ran out before what it waited for happened (`reactors invocation --wait`): like an unreachable server,
 * nothing is wrong with the request, and running it again later may succeed.
 */
export class WaitTimedOut extends Error {
  override name = "WaitTimedOut";
}

/** No answer from the server at `url`; `error` says why (refused, unknown host, timed out). */
export class ServerUnreachable extends Error {
  readonly url: string;
  readonly error: TesseraConnectionError;

  constructor(url: string, error: TesseraConnectionError) {
    super(`cannot reach ${url}`, { cause: error });
    this.name = "ServerUnreachable";
    this.url = url;
    this.error = error;
  }
}

export interface Explained {
  readonly code: ExitCode;
  /** One line, without the `tessera:` prefix, saying what happened and what to do. */
  readonly message: string;
}

/**
 * The one mapping from an error to an exit code and a one-line message (never a stack trace). Control characters
 * are shown escaped: messages quote the server and, for a reactor's errors, text the reactor's code chose, which
 * must not be able to drive the terminal or break the line.
 */
export function explain(error: unknown): Explained {
  const { code, message } = explainUnescaped(error);
  // A configuration error lists one problem a line, all of them Tessera's own words: its lines stay lines.
  const lines = error instanceof ConfigurationError ? message.split("\n") : [message];
  return { code, message: lines.map(printable).join("\n") };
}

function explainUnescaped(error: unknown): Explained {
  if (error instanceof UsageError) {
    return { code: EXIT.usage, message: `${error.message} (run '${error.command} --help' for usage)` };
  }
  if (error instanceof ConfigurationError) return { code: EXIT.config, message: error.message };
  if (error instanceof CommandFailure) return { code: EXIT.failure, message: error.message };
  if (error instanceof MasterKeyRefused) return { code: error.code, message: error.message };
  if (error instanceof StoreUnavailable) return { code: EXIT.unavailable, message: error.message };
  if (error instanceof BadInput) return { code: EXIT.refused, message: error.message };
  if (error instanceof ServerUnreachable) return { code: EXIT.unreachable, message: unreachable(error) };
  if (error instanceof WaitTimedOut) return { code: EXIT.unreachable, message: error.message };
  if (error instanceof ReactorResponse) return reactorResponse(error);
  if (error instanceof TesseraConnectionError) {
    return { code: EXIT.unreachable, message: `cannot reach the server: ${error.message}` };
  }
  if (error instanceof TesseraError) return explainResponse(error);
  const message = error instanceof Error ? error.message : String(error);
  return {
    code: EXIT.failure,
    message: `unexpected error: ${message} (set TESSERA_DEBUG=1 to see where it came from)`,
  };
}

function unreachable({ url, error }: ServerUnreachable): string {
  if (error.timedOut) {
    return `${url} did not answer in time: it may be overloaded, or TESSERA_URL / --url may point elsewhere (the request may still have been carried out)`;
  }
  return `cannot reach ${url} (${reasonOf(error.cause)}): is the server running? set TESSERA_URL or --url`;
}

/**
 * Node's fetch fails with "fetch failed"; the reason is further down its causes: a code (ECONNREFUSED,
 * ENOTFOUND, ...) or, for a URL fetch refuses outright, a message ("bad port").
 */
function reasonOf(error: unknown): string {
  let reason = "no response";
  for (let current = error, depth = 0; current instanceof Error && depth < 5; depth++) {
    const code = (current as NodeJS.ErrnoException).code;
    if (typeof code === "string") return code;
    reason = current.message;
    current = current.cause;
  }
  return reason;
}

const ADVICE: Partial<Record<number, string>> = {
  401: "check SVC_API_KEY or --key",
  403: "use a key whose Application holds that permission",
};

/** The longest part of a reactor's own body that goes into the message; the rest is cut. */
const BODY_SHOWN = 500;

function reactorResponse({ status, body }: ReactorResponse): Explained {
  const text = JSON.stringify(body) ?? "";
  const shown = text.length > BODY_SHOWN ? `${text.slice(0, BODY_SHOWN - 1)}…` : text;
  return {
    code: status >= 400 && status < 500 ? EXIT.refused : EXIT.failure,
    message: `the reactor answered ${status} with its own response: ${shown}`,
  };
}

function explainResponse(error: TesseraError): Explained {
  const status = `${error.status}${error.title === undefined ? "" : ` ${error.title}`}`;
  const fields = Object.entries(error.errors ?? {})
    .map(([field, messages]) => `${field}: ${messages.join(", ")}`)
    .join("; ");
  const detail = error.detail?.replace(/\.$/, "") ?? "";
  const advice = ADVICE[error.status];
  const said =
    (detail === "" ? "" : `: ${detail}`) +
    (fields === "" ? "" : `: ${fields}`) +
    (advice === undefined ? "" : `; ${advice}`);
  if (error.status >= 300 && error.status < 400) {
    // Never followed (connection.ts): the key would go wherever Location points.
    return {
      code: EXIT.failure,
      message: `the server answered ${status}, a redirect, which the CLI does not follow: set TESSERA_URL or --url to the server's own address`,
    };
  }
  if (error.status >= 400 && error.status < 500) {
    return { code: EXIT.refused, message: `the server refused the request (${status})${said}` };
  }
  return { code: EXIT.failure, message: `the server failed (${status})${said}` };
}
