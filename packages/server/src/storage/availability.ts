import type { DatabaseConfig } from "./settings.js";

/**
 * Why the store cannot serve, in words an operator acts on:
 * - `refused`, `unreachable`, `timeout`, `dns`: no connection to the database server (down, restarting, wrong
 *   address, network);
 * - `dns`: the host name does not resolve at all (a typo, or a name that does not exist yet);
 * - `auth`: the server refuses the user or password (or has no such database);
 * - `tls`: TLS could not be set up (the server has none, or its certificate does not verify);
 * - `shutdown`: the server is stopping, starting or out of connections;
 * - `busy`: SQLite's file stayed locked by another connection beyond the busy timeout;
 * - `disk-full`, `read-only`: the store cannot write.
 */
export type OutageReason =
  | "refused"
  | "unreachable"
  | "timeout"
  | "dns"
  | "auth"
  | "tls"
  | "shutdown"
  | "busy"
  | "disk-full"
  | "read-only";

export interface Outage {
  readonly reason: OutageReason;
  /** Short, for a log line or a problem's detail: "connection refused", "the disk is full". */
  readonly description: string;
  /**
   * When a retry may succeed without anyone acting: a restart, a failover or a lock held a moment longer. Disk
   * full, a read-only file, a wrong password or an unknown host wait for an operator: no time is promised.
   */
  readonly retryAfterSeconds?: number;
}

/** After a lock held beyond the busy timeout, another try soon is likely to get in. */
const BUSY_RETRY_AFTER_S = 1;
/** A restart or a failover of PostgreSQL takes seconds. */
const RECONNECT_RETRY_AFTER_S = 5;

const NETWORK_CODES: Readonly<Record<string, Omit<Outage, "retryAfterSeconds">>> = {
  ECONNREFUSED: { reason: "refused", description: "connection refused" },
  ECONNRESET: { reason: "unreachable", description: "connection reset" },
  EPIPE: { reason: "unreachable", description: "connection closed" },
  EHOSTUNREACH: { reason: "unreachable", description: "host unreachable" },
  ENETUNREACH: { reason: "unreachable", description: "network unreachable" },
  EHOSTDOWN: { reason: "unreachable", description: "host down" },
  ETIMEDOUT: { reason: "timeout", description: "connection timed out" },
  EAI_AGAIN: { reason: "unreachable", description: "host name lookup failed for now (EAI_AGAIN)" },
};

/** pg's own messages for a connection that went away; it gives them no code. */
const CONNECTION_LOST =
  /^(Connection terminated|Client has encountered a connection error|timeout exceeded when trying to connect|Connection terminated due to connection timeout)/;

/** pg's message when TLS was asked for and the server has none. */
const NO_TLS = /does not support SSL/;

/** Node's and OpenSSL's codes for a certificate that does not verify. */
const TLS_CODES =
  /^(ERR_TLS_|ERR_SSL_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT|CERT_|EPROTO)/;

/**
 * Whether `error` (or what caused it) says the store cannot be used at the moment, as opposed to a failure of the
 * statement itself (a constraint, a bug). Both engines' errors are read here and nowhere else: requests answer
 * these 503 `store-unavailable`, background loops log them once per outage, and a start names them.
 */
export function storeOutage(error: unknown): Outage | undefined {
  for (
    let current = error, depth = 0;
    typeof current === "object" && current !== null && depth < 5;
    depth++
  ) {
    const found = outageOf(current);
    if (found !== undefined) return found;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function outageOf(error: { code?: unknown; message?: unknown; hostname?: unknown }): Outage | undefined {
  const code = typeof error.code === "string" ? error.code : "";
  const message = typeof error.message === "string" ? error.message : "";
  const reconnect = (outage: Omit<Outage, "retryAfterSeconds">): Outage => ({
    ...outage,
    retryAfterSeconds: RECONNECT_RETRY_AFTER_S,
  });
  if (code === "ENOTFOUND") {
    const host = typeof error.hostname === "string" ? ` ${error.hostname}` : "";
    return { reason: "dns", description: `the host name${host} does not resolve` };
  }
  const network = NETWORK_CODES[code];
  if (network !== undefined) return reconnect(network);
  if (code.startsWith("SQLITE_")) return sqliteOutage(code);
  if (/^[0-9A-Z]{5}$/.test(code)) return postgresOutage(code, message);
  if (TLS_CODES.test(code) || (code === "" && NO_TLS.test(message))) {
    return { reason: "tls", description: `TLS failed: ${message || code}` };
  }
  if (code === "" && CONNECTION_LOST.test(message)) {
    return reconnect({ reason: "unreachable", description: "connection lost" });
  }
  return undefined;
}

/** SQLSTATE codes (PostgreSQL appendix A) that say the server, not the statement, is the problem. */
function postgresOutage(code: string, message: string): Outage | undefined {
  // Class 28: invalid authorization; 3D000: no such database. Both need the configuration fixed.
  if (code.startsWith("28")) return { reason: "auth", description: `authentication failed: ${message}` };
  if (code === "3D000") return { reason: "auth", description: message };
  if (code === "53100") return { reason: "disk-full", description: "the database server's disk is full" };
  // Class 08: connection exception; 57P01-57P03: shutting down, crashed, starting up; 53300: too many connections.
  if (code.startsWith("08") || /^57P0[1-3]$/.test(code) || code === "53300") {
    return { reason: "shutdown", description: message, retryAfterSeconds: RECONNECT_RETRY_AFTER_S };
  }
  // A standby that has not been promoted yet (during a failover) refuses writes for a moment.
  if (code === "25006") {
    return { reason: "read-only", description: message, retryAfterSeconds: RECONNECT_RETRY_AFTER_S };
  }
  return undefined;
}

/** SQLite's extended codes as better-sqlite3 reports them. */
function sqliteOutage(code: string): Outage | undefined {
  if (code.startsWith("SQLITE_BUSY")) {
    return {
      reason: "busy",
      description: "the database file is locked by another connection",
      retryAfterSeconds: BUSY_RETRY_AFTER_S,
    };
  }
  if (code === "SQLITE_FULL") return { reason: "disk-full", description: "the disk is full" };
  if (code.startsWith("SQLITE_READONLY")) {
    return { reason: "read-only", description: "the database file cannot be written" };
  }
  return undefined;
}

/** Where the store lives, for messages: `host:port` of PostgreSQL or the SQLite file. Never the password. */
export function storeLocation(config: DatabaseConfig): string {
  if (config.kind === "sqlite") return config.path;
  try {
    const url = new URL(config.url);
    const host = decodeURIComponent(url.hostname) || "localhost";
    return `${host}:${url.port || "5432"}`;
  } catch {
    return "(the PostgreSQL URL)";
  }
}

/** The store could not be used when the server started: nothing was migrated or served. */
export class StoreUnreachableError extends Error {
  readonly outage: Outage;
  readonly location: string;

  constructor(location: string, outage: Outage, cause: unknown) {
    super(`cannot use the store at ${location}: ${outage.description}`, { cause });
    this.name = "StoreUnreachableError";
    this.location = location;
    this.outage = outage;
  }
}

/**
 * What a failed start throws: a StoreUnreachableError when what went wrong (however deep in the causes, such as a
 * migration's) is that the store cannot be used, so that it is reported as that, with where and why; else the
 * error itself.
 */
export function unusableStore(error: unknown, config: DatabaseConfig): unknown {
  const outage = storeOutage(error);
  return outage === undefined ? error : new StoreUnreachableError(storeLocation(config), outage, error);
}
