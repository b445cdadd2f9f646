import os from "node:os";
import path from "node:path";
import { parseCors, parseElements, parseSessions, type ElementsConfig } from "./config-browser.js";
import { loadMasterKeyFile, parseMasterKey, parseMasterKeyFile } from "./config-master-key.js";
import { isLoopback, nonEmpty, parseBoolean, parseInteger, type Env } from "./config-values.js";
import type { MasterKeyConfig } from "./keys/providers/settings.js";
import { isAddressOrRange } from "./net/address.js";
import type { ConcurrencyLimit, LimitsConfig } from "./limits/settings.js";
import type { Rate } from "./limits/token-bucket.js";
import type { ReactorConfig } from "./reactors/settings.js";
import type { CorsSettings } from "./server/cors.js";
import type { SessionSettings } from "./sessions/settings.js";
import { parseReactorModules } from "./reactors/sandbox/modules.js";
import { ConfigError } from "./shared/config-error.js";
import type { DatabaseConfig } from "./storage/settings.js";
import { MAX_TERMS } from "./search/parser.js";

export { ConfigError, loadMasterKeyFile };
export type { ElementsConfig };

export interface Config {
  readonly production: boolean;
  readonly host: string;
  readonly port: number;
  readonly dataDir: string;
  readonly database: DatabaseConfig;
  readonly masterKey: MasterKeyConfig;
  /**
   * The master key being rotated away from (TESSERA_MASTER_KEY_PREVIOUS_FILE): rows it wrapped stay readable until
   * `tessera keys rotate-master` has re-wrapped them (docs/keys.md#rotating-the-master-key).
   */
  readonly previousMasterKey: MasterKeyConfig | undefined;
  /** How long an unwrapped tenant key is kept after the provider last confirmed it (keys/providers/custody.ts). */
  readonly tenantKeyCacheMs: number;
  readonly bootstrapKey: string | undefined;
  readonly logLevel: LogLevel;
  readonly bodyLimit: number;
  readonly sweepIntervalMs: number;
  readonly reactors: ReactorConfig;
  readonly webhooks: WebhookConfig;
  readonly jobs: JobsConfig;
  readonly metrics: MetricsConfig;
  readonly limits: LimitsConfig;
  readonly elements: ElementsConfig;
  readonly sessions: SessionSettings;
  readonly cors: CorsSettings;
  /** The web console at /console (docs/console.md); its files are built with the package @tessera/console. */
  readonly console: ConsoleConfig;
}

export interface ConsoleConfig {
  readonly enabled: boolean;
}

/** GET /metrics (docs/observability.md#exposure). */
export interface MetricsConfig {
  /** Whether /metrics is served; a server that does not serve it does not collect either. */
  readonly enabled: boolean;
  /** When set, /metrics requires `Authorization: Bearer <token>`. */
  readonly token: string | undefined;
}

/** Webhook delivery for asynchronous reactor invocations (docs/reactors.md#webhooks). */
export interface WebhookConfig {
  /** Callback URLs may point to loopback, private and link-local addresses (tests, closed networks). */
  readonly allowPrivate: boolean;
  /** How long one delivery attempt waits for the receiver. */
  readonly timeoutMs: number;
  /** The delay before the first retry, doubled for each one after (capped at an hour, for 24 hours). */
  readonly retryBaseMs: number;
  /** Attempts in flight to one destination (scheme, host, port) at once, over every instance on the store. */
  readonly maxConcurrentPerDestination: number;
}

/** The durable background work every instance shares: asynchronous invocations and their webhooks. */
export interface JobsConfig {
  /** How often an instance looks for work others enqueued. */
  readonly pollMs: number;
  /** Asynchronous invocations running at once on one instance. */
  readonly concurrency: number;
  /** How long a finished invocation whose webhook is settled stays readable. */
  readonly retentionMs: number;
  /** Invocations one tenant may have unsettled (queued, running, or their webhook pending); beyond: 429. */
  readonly maxQueuedPerTenant: number;
}

const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const MIN_BOOTSTRAP_KEY_LENGTH = 32;
export const MIN_METRICS_TOKEN_LENGTH = 32;
/** Sent in a header, so visible ASCII only; long enough not to be guessed. */
const METRICS_TOKEN = new RegExp(`^[\\x21-\\x7e]{${MIN_METRICS_TOKEN_LENGTH},1024}$`);

/**
 * Parses the environment once into a frozen config. Every problem is collected so that an operator fixes them
 * all in one go rather than one restart at a time. Secrets have no defaults.
 */
export function loadConfig(env: Env = process.env, cwd = process.cwd()): Config {
  const problems: string[] = [];
  const production = env.NODE_ENV === "production";

  const port = parseInteger(env.TESSERA_PORT, 3000, 0, 65535, "TESSERA_PORT", problems);
  const bodyLimit = parseInteger(
    env.TESSERA_BODY_LIMIT,
    1024 * 1024,
    1024,
    64 * 1024 * 1024,
    "TESSERA_BODY_LIMIT",
    problems,
  );
  const sweepIntervalMs = parseInteger(
    env.TESSERA_SWEEP_INTERVAL_MS,
    60_000,
    100,
    24 * 3600 * 1000,
    "TESSERA_SWEEP_INTERVAL_MS",
    problems,
  );
  const host = nonEmpty(env.TESSERA_HOST) ?? "127.0.0.1";
  const dataDir = path.resolve(cwd, nonEmpty(env.TESSERA_DATA_DIR) ?? "data");
  const walLimitBytes =
    1024 *
    1024 *
    parseInteger(env.TESSERA_SQLITE_WAL_LIMIT_MB, 64, 1, 65_536, "TESSERA_SQLITE_WAL_LIMIT_MB", problems);
  const database = parseDatabaseUrl(env.TESSERA_DATABASE_URL, dataDir, cwd, walLimitBytes, problems);

  const logLevel = (nonEmpty(env.TESSERA_LOG_LEVEL) ?? "info") as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    problems.push(`TESSERA_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}`);
  }

  const bootstrapKey = nonEmpty(env.TESSERA_BOOTSTRAP_KEY);
  if (bootstrapKey !== undefined && bootstrapKey.length < MIN_BOOTSTRAP_KEY_LENGTH) {
    problems.push(`TESSERA_BOOTSTRAP_KEY must be at least ${MIN_BOOTSTRAP_KEY_LENGTH} characters`);
  }

  const masterKey = parseMasterKey(env, production, database, dataDir, cwd, problems);
  const previousFile = nonEmpty(env.TESSERA_MASTER_KEY_PREVIOUS_FILE);
  const previousMasterKey =
    previousFile === undefined
      ? undefined
      : parseMasterKeyFile(
          path.resolve(cwd, previousFile),
          "TESSERA_MASTER_KEY_PREVIOUS_FILE",
          cwd,
          problems,
        );
  const tenantKeyCacheMs =
    1000 *
    parseInteger(
      env.TESSERA_TENANT_KEY_CACHE_SECONDS,
      300,
      1,
      86_400,
      "TESSERA_TENANT_KEY_CACHE_SECONDS",
      problems,
    );
  const reactors: ReactorConfig = {
    dir: path.resolve(cwd, nonEmpty(env.TESSERA_REACTOR_DIR) ?? path.join(os.tmpdir(), "tessera-reactors")),
    egress: nonEmpty(env.TESSERA_REACTOR_EGRESS)?.trim() ?? "",
    timeoutMs: parseInteger(
      env.TESSERA_REACTOR_TIMEOUT_MS,
      30_000,
      100,
      210_000,
      "TESSERA_REACTOR_TIMEOUT_MS",
      problems,
    ),
    maxWorkers: parseInteger(
      env.TESSERA_REACTOR_MAX_WORKERS,
      32,
      1,
      1_000,
      "TESSERA_REACTOR_MAX_WORKERS",
      problems,
    ),
    workersPerReactor: parseInteger(
      env.TESSERA_REACTOR_WORKERS_PER_REACTOR,
      2,
      1,
      64,
      "TESSERA_REACTOR_WORKERS_PER_REACTOR",
      problems,
    ),
    heapMiB: parseInteger(env.TESSERA_REACTOR_HEAP_MB, 128, 16, 4_096, "TESSERA_REACTOR_HEAP_MB", problems),
    rssMiB: parseInteger(env.TESSERA_REACTOR_RSS_MB, 384, 64, 8_192, "TESSERA_REACTOR_RSS_MB", problems),
    cgroup: parseReactorCgroup(env.TESSERA_REACTOR_CGROUP, problems),
    modules: Object.freeze(parseReactorModules(env.TESSERA_REACTOR_MODULES, problems)),
  };

  const webhooks: WebhookConfig = {
    allowPrivate: parseBoolean(env.TESSERA_WEBHOOK_ALLOW_PRIVATE, "TESSERA_WEBHOOK_ALLOW_PRIVATE", problems),
    timeoutMs: parseInteger(
      env.TESSERA_WEBHOOK_TIMEOUT_MS,
      10_000,
      100,
      60_000,
      "TESSERA_WEBHOOK_TIMEOUT_MS",
      problems,
    ),
    retryBaseMs: parseInteger(
      env.TESSERA_WEBHOOK_RETRY_BASE_MS,
      5_000,
      10,
      3_600_000,
      "TESSERA_WEBHOOK_RETRY_BASE_MS",
      problems,
    ),
    maxConcurrentPerDestination: parseInteger(
      env.TESSERA_WEBHOOK_MAX_CONCURRENT_PER_DESTINATION,
      2,
      1,
      256,
      "TESSERA_WEBHOOK_MAX_CONCURRENT_PER_DESTINATION",
      problems,
    ),
  };
  const jobs: JobsConfig = {
    pollMs: parseInteger(env.TESSERA_JOB_POLL_MS, 1_000, 10, 60_000, "TESSERA_JOB_POLL_MS", problems),
    concurrency: parseInteger(
      env.TESSERA_ASYNC_CONCURRENCY,
      4,
      1,
      256,
      "TESSERA_ASYNC_CONCURRENCY",
      problems,
    ),
    retentionMs:
      3_600_000 *
      parseInteger(
        env.TESSERA_INVOCATION_RETENTION_HOURS,
        168,
        1,
        24 * 365,
        "TESSERA_INVOCATION_RETENTION_HOURS",
        problems,
      ),
    maxQueuedPerTenant: parseInteger(
      env.TESSERA_ASYNC_MAX_QUEUED_PER_TENANT,
      1_000,
      1,
      1_000_000,
      "TESSERA_ASYNC_MAX_QUEUED_PER_TENANT",
      problems,
    ),
  };

  const metrics = parseMetrics(env, host, problems);
  const limits = parseLimits(env, problems);
  const elements = parseElements(env, production, problems);
  const sessions = parseSessions(env, problems);
  const cors = parseCors(env, problems);
  const consoleConfig: ConsoleConfig = {
    enabled:
      nonEmpty(env.TESSERA_CONSOLE_ENABLED) === undefined ||
      parseBoolean(env.TESSERA_CONSOLE_ENABLED, "TESSERA_CONSOLE_ENABLED", problems),
  };

  if (problems.length > 0 || masterKey === undefined || database === undefined) {
    throw new ConfigError(problems);
  }
  return Object.freeze({
    production,
    host,
    port,
    dataDir,
    database,
    masterKey,
    previousMasterKey,
    tenantKeyCacheMs,
    bootstrapKey,
    logLevel,
    bodyLimit,
    sweepIntervalMs,
    reactors: Object.freeze(reactors),
    webhooks: Object.freeze(webhooks),
    jobs: Object.freeze(jobs),
    metrics: Object.freeze(metrics),
    limits: Object.freeze(limits),
    elements: Object.freeze(elements),
    sessions: Object.freeze(sessions),
    cors: Object.freeze(cors),
    console: Object.freeze(consoleConfig),
  });
}

/**
 * Metrics show traffic shape (request rates per route, reactor use), so where the API is reachable from other
 * machines they are served only when the operator says so: with a token, or with TESSERA_METRICS=true.
 */
function parseMetrics(env: Env, host: string, problems: string[]): MetricsConfig {
  const token = nonEmpty(env.TESSERA_METRICS_TOKEN);
  if (token !== undefined && !METRICS_TOKEN.test(token)) {
    problems.push(
      `TESSERA_METRICS_TOKEN must be ${MIN_METRICS_TOKEN_LENGTH} to 1024 printable ASCII characters without spaces`,
    );
  }
  const enabled =
    nonEmpty(env.TESSERA_METRICS) === undefined
      ? token !== undefined || isLoopback(host)
      : parseBoolean(env.TESSERA_METRICS, "TESSERA_METRICS", problems);
  return { enabled, token };
}

function parseLimits(env: Env, problems: string[]): LimitsConfig {
  const integer = (name: string, fallback: number, min: number, max: number) =>
    parseInteger(env[name], fallback, min, max, name, problems);
  const rate = (prefix: string, perSecond: number, burst: number): Rate | undefined => {
    const per = integer(`${prefix}_PER_SECOND`, perSecond, 0, 1_000_000);
    const size = integer(`${prefix}_BURST`, burst, 1, 1_000_000);
    return per === 0 ? undefined : { perSecond: per, burst: size };
  };
  const failuresPerMinute = integer("TESSERA_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE", 60, 0, 1_000_000);
  const failuresBurst = integer("TESSERA_RATE_LIMIT_AUTH_FAILURES_BURST", 30, 1, 1_000_000);
  const dataTermsPerMinute = integer("TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE", 600, 0, 1_000_000);
  // One query may hold MAX_TERMS data: terms, and a bucket smaller than that would refuse such a query forever.
  if (dataTermsPerMinute !== 0 && dataTermsPerMinute < MAX_TERMS) {
    problems.push(`TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE must be 0 (off) or at least ${MAX_TERMS}`);
  }
  const concurrency = (what: string, limit: number, queue: number): ConcurrencyLimit => ({
    limit: integer(`TESSERA_MAX_CONCURRENT_${what}`, limit, 1, 10_000),
    queue: integer(`TESSERA_MAX_QUEUED_${what}`, queue, 0, 100_000),
  });
  return {
    trustProxy: parseTrustProxy(env.TESSERA_TRUST_PROXY, problems),
    perKey: rate("TESSERA_RATE_LIMIT_KEY", 1_000, 2_000),
    // Keys that live in browsers: a public key is shared by every visitor of a page, a session by one of them.
    perPublicKey: rate("TESSERA_RATE_LIMIT_PUBLIC_KEY", 100, 200),
    perSession: rate("TESSERA_RATE_LIMIT_SESSION", 10, 20),
    perAddress: rate("TESSERA_RATE_LIMIT_ADDRESS", 2_000, 4_000),
    authFailures:
      failuresPerMinute === 0 ? undefined : { perSecond: failuresPerMinute / 60, burst: failuresBurst },
    // A minute's allowance at once, then the rest of the minute's refill.
    dataTerms:
      dataTermsPerMinute === 0
        ? undefined
        : { perSecond: dataTermsPerMinute / 60, burst: dataTermsPerMinute },
    maxEntries: integer("TESSERA_RATE_LIMIT_MAX_ENTRIES", 100_000, 1, 10_000_000),
    searches: Object.freeze(concurrency("SEARCHES", 32, 64)),
    reacts: Object.freeze(concurrency("REACTS", 64, 64)),
    queueTimeoutMs: integer("TESSERA_QUEUE_TIMEOUT_MS", 10_000, 1, 600_000),
    pressure: Object.freeze({
      maxEventLoopDelayMs: integer("TESSERA_MAX_EVENT_LOOP_DELAY_MS", 1_000, 0, 60_000),
      maxHeapUsedPercent: integer("TESSERA_MAX_HEAP_USED_PERCENT", 90, 0, 100),
      maxRssMiB: integer("TESSERA_MAX_RSS_MB", 0, 0, 1_048_576),
    }),
  };
}

/** Names proxy-addr knows for whole ranges. */
const PROXY_RANGES = ["loopback", "linklocal", "uniquelocal"];

/**
 * `false` (the default: the peer is the client), `true` (believe every X-Forwarded-For hop: only when every
 * connection comes through a proxy that overwrites it), a number of proxy hops to trust, or a comma-separated
 * list of the proxies' addresses or ranges.
 */
function parseTrustProxy(raw: string | undefined, problems: string[]): LimitsConfig["trustProxy"] {
  const text = nonEmpty(raw)?.trim();
  if (text === undefined || text.toLowerCase() === "false") return false;
  if (text.toLowerCase() === "true") return true;
  if (/^\d+$/.test(text)) {
    const hops = Number(text);
    if (hops >= 1 && hops <= 100) return hops;
  } else {
    const entries = text.split(",").map((entry) => entry.trim());
    if (entries.every((entry) => PROXY_RANGES.includes(entry) || isAddressOrRange(entry))) {
      return Object.freeze(entries);
    }
  }
  problems.push(
    "TESSERA_TRUST_PROXY must be true, false, a hop count from 1 to 100, or a comma-separated list of " +
      "addresses, CIDR ranges, loopback, linklocal or uniquelocal",
  );
  return false;
}

function parseReactorCgroup(raw: string | undefined, problems: string[]): ReactorConfig["cgroup"] {
  const text = nonEmpty(raw)?.trim().toLowerCase() ?? "auto";
  if (text === "auto" || text === "off") return text;
  problems.push("TESSERA_REACTOR_CGROUP must be auto or off");
  return "auto";
}

function parseDatabaseUrl(
  raw: string | undefined,
  dataDir: string,
  cwd: string,
  walLimitBytes: number,
  problems: string[],
): DatabaseConfig | undefined {
  const url = nonEmpty(raw);
  if (url === undefined) return { kind: "sqlite", path: path.join(dataDir, "tessera.db"), walLimitBytes };
  if (url === "sqlite::memory:") return { kind: "sqlite", path: ":memory:", walLimitBytes };
  if (url.startsWith("sqlite:")) {
    const file = url.slice("sqlite:".length);
    if (file.length > 0) return { kind: "sqlite", path: path.resolve(cwd, file), walLimitBytes };
  }
  if (/^postgres(ql)?:\/\//.test(url)) {
    try {
      new URL(url);
      return { kind: "postgres", url };
    } catch {
      // reported below
    }
  }
  problems.push(
    "TESSERA_DATABASE_URL must be sqlite:<path>, sqlite::memory: or postgres://user:password@host:port/db",
  );
  return undefined;
}
