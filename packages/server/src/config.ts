import { isIPv4 } from "node:net";
import os from "node:os";
import { readFileSync } from "node:fs";
import path from "node:path";
import { parseEnv } from "node:util";
import { PROVIDER_NAMES, type ProviderName } from "./keys/providers/provider.js";
import {
  decodeMasterKey,
  type CommandSettings,
  type MasterKeyConfig,
  type MasterKeySource,
  type Pkcs11Settings,
} from "./keys/providers/settings.js";
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

export { ConfigError };

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

/** Tessera Elements, the hosted fields (docs/elements.md#configuration). */
export interface ElementsConfig {
  /**
   * Origins whose pages may embed the field frames (CSP frame-ancestors), exact `scheme://host[:port]`. Empty:
   * no page may, and Elements is off for merchants.
   */
  readonly origins: readonly string[];
  /** Serves the demo checkout at /elements/demo (which also lets the vault's own origin embed the frames). */
  readonly demo: boolean;
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

type Env = Readonly<Record<string, string | undefined>>;

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

const MAX_ELEMENTS_ORIGINS = 100;

/**
 * TESSERA_ELEMENTS_ORIGINS is its own setting rather than the CORS origins: embedding the fields and calling the
 * API from a page's script are different grants, and a merchant that uses only the fields keeps its pages out of
 * CORS altogether (docs/elements.md#configuration).
 */
function parseElements(env: Env, production: boolean, problems: string[]): ElementsConfig {
  const origins: string[] = [];
  for (const entry of (nonEmpty(env.TESSERA_ELEMENTS_ORIGINS) ?? "").split(",")) {
    const text = entry.trim();
    if (text === "") continue;
    const origin = parseOrigin(text);
    if (origin === undefined) {
      problems.push(
        `TESSERA_ELEMENTS_ORIGINS: ${JSON.stringify(text)} is not an origin: give scheme://host[:port] of a page, ` +
          "like https://shop.example.com, without a path, a trailing slash or a wildcard",
      );
    } else if (
      production &&
      origin.startsWith("http:") &&
      !isLoopback(new URL(origin).hostname.replace(/^\[|\]$/g, ""))
    ) {
      problems.push(
        `TESSERA_ELEMENTS_ORIGINS: ${origin} is plain http; in production a checkout page must be https ` +
          "(anyone on the network could replace the page around the fields)",
      );
    } else if (!origins.includes(origin)) {
      origins.push(origin);
    }
  }
  if (origins.length > MAX_ELEMENTS_ORIGINS) {
    problems.push(`TESSERA_ELEMENTS_ORIGINS: at most ${MAX_ELEMENTS_ORIGINS} origins`);
  }
  const demo =
    nonEmpty(env.TESSERA_ELEMENTS_DEMO) === undefined
      ? !production
      : parseBoolean(env.TESSERA_ELEMENTS_DEMO, "TESSERA_ELEMENTS_DEMO", problems);
  return { origins: Object.freeze(origins), demo };
}

/** BT's default lifetime is 3 minutes: long enough to hand the nonce to a backend, short enough to leak little. */
const SESSION_TTL_S = 180;

function parseSessions(env: Env, problems: string[]): SessionSettings {
  const ttl = parseInteger(
    env.TESSERA_SESSION_TTL_SECONDS,
    SESSION_TTL_S,
    10,
    86_400,
    "TESSERA_SESSION_TTL_SECONDS",
    problems,
  );
  const max = parseInteger(
    env.TESSERA_SESSION_MAX_TTL_SECONDS,
    3_600,
    10,
    86_400,
    "TESSERA_SESSION_MAX_TTL_SECONDS",
    problems,
  );
  if (max < ttl)
    problems.push("TESSERA_SESSION_MAX_TTL_SECONDS must be at least TESSERA_SESSION_TTL_SECONDS");
  return { ttlMs: ttl * 1000, maxTtlMs: max * 1000 };
}

const MAX_CORS_ORIGINS = 100;

/**
 * Exact origins only: a wildcard would let any page on the internet drive the public and session routes with a
 * key it got hold of, and browsers refuse `*` with credentials anyway.
 */
function parseCors(env: Env, problems: string[]): CorsSettings {
  const origins: string[] = [];
  for (const entry of (nonEmpty(env.TESSERA_CORS_ORIGINS) ?? "").split(",")) {
    const text = entry.trim();
    if (text.length === 0) continue;
    const origin = parseOrigin(text);
    if (origin === undefined) {
      problems.push(
        `TESSERA_CORS_ORIGINS: ${JSON.stringify(text)} is not an origin: give scheme://host[:port] of a page, ` +
          "without path or wildcard",
      );
    } else if (!origins.includes(origin)) {
      origins.push(origin);
    }
  }
  if (origins.length > MAX_CORS_ORIGINS)
    problems.push(`TESSERA_CORS_ORIGINS: at most ${MAX_CORS_ORIGINS} origins`);
  const maxAgeSeconds = parseInteger(
    env.TESSERA_CORS_MAX_AGE_SECONDS,
    600,
    0,
    86_400,
    "TESSERA_CORS_MAX_AGE_SECONDS",
    problems,
  );
  return { origins: Object.freeze(origins), maxAgeSeconds };
}

/** `scheme://host[:port]` as a browser writes an origin (lower-case, default port left out), else undefined. */
function parseOrigin(text: string): string | undefined {
  if (!/^https?:\/\/[^/?#@*\s]+$/i.test(text)) return undefined;
  try {
    const url = new URL(text);
    return url.origin === "null" ? undefined : url.origin;
  } catch {
    return undefined;
  }
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

function isLoopback(host: string): boolean {
  const name = host.trim().toLowerCase();
  return name === "localhost" || name === "::1" || (isIPv4(name) && name.startsWith("127."));
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

const PKCS11_VARIABLES = [
  "TESSERA_PKCS11_MODULE",
  "TESSERA_PKCS11_TOKEN_LABEL",
  "TESSERA_PKCS11_SLOT",
  "TESSERA_PKCS11_PIN_FILE",
  "TESSERA_PKCS11_KEY_LABEL",
  "TESSERA_PKCS11_GCM_IV",
] as const;
const COMMAND_VARIABLES = [
  "TESSERA_KMS_KEY_ID",
  "TESSERA_KMS_WRAP_COMMAND",
  "TESSERA_KMS_UNWRAP_COMMAND",
  "TESSERA_KMS_ENCODING",
  "TESSERA_KMS_TIMEOUT_MS",
  "TESSERA_KMS_ENV",
] as const;

/** The variables a master key file may hold: a provider and its settings, nothing else. */
const MASTER_KEY_VARIABLES = new Set([
  "TESSERA_MASTER_KEY_PROVIDER",
  "TESSERA_MASTER_KEY",
  "TESSERA_MASTER_KEY_FILE",
  ...PKCS11_VARIABLES,
  ...COMMAND_VARIABLES,
]);

/**
 * A master key's configuration in a file of `NAME=value` lines (the .env format, parsed by Node's util.parseEnv):
 * the previous key during a rotation (TESSERA_MASTER_KEY_PREVIOUS_FILE) and the target of `tessera keys
 * rotate-master --to`. A raw key must be given (TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE): no development key
 * file is made for it. Relative paths are resolved against `cwd`.
 */
export function loadMasterKeyFile(file: string, cwd = process.cwd()): MasterKeyConfig {
  const problems: string[] = [];
  const parsed = parseMasterKeyFile(path.resolve(cwd, file), file, cwd, problems);
  if (parsed === undefined || problems.length > 0) throw new ConfigError(problems);
  return parsed;
}

function parseMasterKeyFile(
  file: string,
  name: string,
  cwd: string,
  problems: string[],
): MasterKeyConfig | undefined {
  let env: Env;
  try {
    env = parseEnv(readFileSync(file, "utf8"));
  } catch (error) {
    problems.push(`${name}: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? "unreadable"})`);
    return undefined;
  }
  const own: string[] = [];
  const unknown = Object.keys(env).filter((variable) => !MASTER_KEY_VARIABLES.has(variable));
  if (unknown.length > 0) {
    own.push(`may hold only a master key provider and its settings, not ${unknown.join(", ")}`);
  }
  const provider = nonEmpty(env.TESSERA_MASTER_KEY_PROVIDER)?.trim().toLowerCase() ?? "raw";
  if (
    provider === "raw" &&
    nonEmpty(env.TESSERA_MASTER_KEY) === undefined &&
    nonEmpty(env.TESSERA_MASTER_KEY_FILE) === undefined
  ) {
    own.push("a raw master key needs TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE");
    problems.push(...own.map((problem) => `${name} (${file}): ${problem}`));
    return undefined;
  }
  const parsed = parseMasterKey(env, true, undefined, cwd, cwd, own);
  problems.push(...own.map((problem) => `${name} (${file}): ${problem}`));
  return own.length > 0 ? undefined : parsed;
}

/**
 * TESSERA_MASTER_KEY_PROVIDER and its provider's settings. Every variable is read whatever the provider, so that a
 * setting meant for another provider is reported instead of silently ignored.
 */
function parseMasterKey(
  env: Env,
  production: boolean,
  database: DatabaseConfig | undefined,
  dataDir: string,
  cwd: string,
  problems: string[],
): MasterKeyConfig | undefined {
  const name = (nonEmpty(env.TESSERA_MASTER_KEY_PROVIDER)?.trim().toLowerCase() ?? "raw") as ProviderName;
  if (!PROVIDER_NAMES.includes(name)) {
    problems.push(`TESSERA_MASTER_KEY_PROVIDER must be one of ${PROVIDER_NAMES.join(", ")}`);
    return undefined;
  }
  const foreign = (variables: readonly string[], provider: ProviderName) => {
    if (name === provider) return;
    for (const variable of variables) {
      if (nonEmpty(env[variable]) !== undefined) {
        problems.push(`${variable} is set, but TESSERA_MASTER_KEY_PROVIDER is ${name}, not ${provider}`);
      }
    }
  };
  foreign(["TESSERA_MASTER_KEY", "TESSERA_MASTER_KEY_FILE"], "raw");
  foreign(PKCS11_VARIABLES, "pkcs11");
  foreign(COMMAND_VARIABLES, "command");
  const pkcs11 = parsePkcs11(env, cwd, name === "pkcs11" ? problems : []);
  const command = parseCommand(env, name === "command" ? problems : []);
  switch (name) {
    case "raw": {
      const source = parseRawMasterKey(env, production, database, dataDir, cwd, problems);
      return source && { provider: "raw", source };
    }
    case "pkcs11":
      return pkcs11 && { provider: "pkcs11", pkcs11 };
    case "command":
      return command && { provider: "command", command };
  }
}

function parsePkcs11(env: Env, cwd: string, problems: string[]): Pkcs11Settings | undefined {
  const module = nonEmpty(env.TESSERA_PKCS11_MODULE);
  const label = nonEmpty(env.TESSERA_PKCS11_TOKEN_LABEL);
  const slotText = nonEmpty(env.TESSERA_PKCS11_SLOT)?.trim();
  const pinFile = nonEmpty(env.TESSERA_PKCS11_PIN_FILE);
  const keyLabel = nonEmpty(env.TESSERA_PKCS11_KEY_LABEL);
  const before = problems.length;
  if (module === undefined)
    problems.push("TESSERA_PKCS11_MODULE: the path of the PKCS#11 library is required");
  if ((label === undefined) === (slotText === undefined)) {
    problems.push("set one of TESSERA_PKCS11_TOKEN_LABEL and TESSERA_PKCS11_SLOT to choose the token");
  }
  const slot = slotText === undefined ? undefined : parseSlot(slotText);
  if (slotText !== undefined && slot === undefined) {
    problems.push("TESSERA_PKCS11_SLOT must be a slot id: decimal, or hexadecimal with 0x");
  }
  if (pinFile === undefined) {
    problems.push(
      "TESSERA_PKCS11_PIN_FILE: a file holding the token's user PIN is required (never the PIN itself)",
    );
  }
  if (keyLabel === undefined) problems.push("TESSERA_PKCS11_KEY_LABEL: the label of the AES key is required");
  const gcmIv = (nonEmpty(env.TESSERA_PKCS11_GCM_IV)?.trim().toLowerCase() ?? "random") as "random" | "token";
  if (gcmIv !== "random" && gcmIv !== "token") problems.push("TESSERA_PKCS11_GCM_IV must be random or token");
  if (problems.length > before || module === undefined || pinFile === undefined || keyLabel === undefined) {
    return undefined;
  }
  return Object.freeze({
    module: path.resolve(cwd, module),
    token: Object.freeze(slot === undefined ? { label: label! } : { slot }),
    pinFile: path.resolve(cwd, pinFile),
    keyLabel,
    gcmIv,
  });
}

function parseSlot(text: string): bigint | undefined {
  if (!/^(?:\d{1,20}|0x[0-9a-fA-F]{1,16})$/.test(text)) return undefined;
  const slot = BigInt(text);
  return slot < 2n ** 64n ? slot : undefined;
}

function parseCommand(env: Env, problems: string[]): CommandSettings | undefined {
  const before = problems.length;
  const keyId = nonEmpty(env.TESSERA_KMS_KEY_ID)?.trim();
  if (keyId === undefined) {
    problems.push("TESSERA_KMS_KEY_ID: the KMS key's name (an ARN, a resource name) is required");
  } else if (!/^[\x21-\x7e]{1,512}$/.test(keyId)) {
    problems.push("TESSERA_KMS_KEY_ID must be 1 to 512 printable ASCII characters without spaces");
  }
  const wrap = parseArgv(env.TESSERA_KMS_WRAP_COMMAND, "TESSERA_KMS_WRAP_COMMAND", problems);
  const unwrap = parseArgv(env.TESSERA_KMS_UNWRAP_COMMAND, "TESSERA_KMS_UNWRAP_COMMAND", problems);
  const encoding = (nonEmpty(env.TESSERA_KMS_ENCODING)?.trim().toLowerCase() ?? "base64") as
    "base64" | "binary";
  if (encoding !== "base64" && encoding !== "binary") {
    problems.push("TESSERA_KMS_ENCODING must be base64 or binary");
  }
  const timeoutMs = parseInteger(
    env.TESSERA_KMS_TIMEOUT_MS,
    10_000,
    100,
    120_000,
    "TESSERA_KMS_TIMEOUT_MS",
    problems,
  );
  const names = (nonEmpty(env.TESSERA_KMS_ENV) ?? "")
    .split(",")
    .map((each) => each.trim())
    .filter((each) => each !== "");
  const invalid = names.filter((each) => !/^[A-Za-z_][A-Za-z0-9_]*$/.test(each));
  if (invalid.length > 0) {
    problems.push(`TESSERA_KMS_ENV must list variable names, comma-separated (not: ${invalid.join(", ")})`);
  }
  if (problems.length > before || keyId === undefined || wrap === undefined || unwrap === undefined) {
    return undefined;
  }
  return Object.freeze({
    keyId,
    wrap,
    unwrap,
    encoding,
    timeoutMs,
    env: Object.freeze([...new Set(names)]),
  });
}

/**
 * A command as a JSON array of strings: the program by absolute path (the commands run with only the listed
 * variables, so no PATH to search, and nothing on it to plant), then its arguments, passed as they are.
 */
function parseArgv(raw: string | undefined, name: string, problems: string[]): readonly string[] | undefined {
  const text = nonEmpty(raw);
  if (text === undefined) {
    problems.push(`${name} is required: a JSON array, the program's absolute path first`);
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length === 0 ||
    parsed.length > 64 ||
    !parsed.every((each) => typeof each === "string" && !each.includes("\0"))
  ) {
    problems.push(
      `${name} must be a JSON array of 1 to 64 strings, like ["/usr/local/bin/aws", "kms", "encrypt", ...]`,
    );
    return undefined;
  }
  const argv = parsed as string[];
  if (!path.isAbsolute(argv[0]!)) {
    problems.push(`${name}: the program must be an absolute path (${JSON.stringify(argv[0])} is not)`);
    return undefined;
  }
  return Object.freeze(argv);
}

function parseRawMasterKey(
  env: Env,
  production: boolean,
  database: DatabaseConfig | undefined,
  dataDir: string,
  cwd: string,
  problems: string[],
): MasterKeySource | undefined {
  const value = nonEmpty(env.TESSERA_MASTER_KEY);
  const file = nonEmpty(env.TESSERA_MASTER_KEY_FILE);
  if (value !== undefined && file !== undefined) {
    problems.push("set only one of TESSERA_MASTER_KEY and TESSERA_MASTER_KEY_FILE");
    return undefined;
  }
  if (value !== undefined) {
    const key = decodeMasterKey(value);
    if (key === undefined) problems.push("TESSERA_MASTER_KEY must be 32 bytes encoded in base64");
    return key && { kind: "value", key };
  }
  if (file !== undefined) return { kind: "file", path: path.resolve(cwd, file) };
  if (production) {
    problems.push("NODE_ENV=production requires TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE");
    return undefined;
  }
  // A generated key lives on one machine; instances sharing a PostgreSQL store would each invent their own
  // and could not read each other's data, so the dev shortcut is only for the embedded store.
  if (database?.kind === "postgres") {
    problems.push("a PostgreSQL store requires TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE");
    return undefined;
  }
  return { kind: "dev-file", path: path.join(dataDir, "master.key") };
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

function parseInteger(
  raw: string | undefined,
  fallback: number,
  min: number,
  max: number,
  name: string,
  problems: string[],
): number {
  const text = nonEmpty(raw);
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max) {
    problems.push(`${name} must be an integer from ${min} to ${max}`);
    return fallback;
  }
  return value;
}

function parseBoolean(raw: string | undefined, name: string, problems: string[]): boolean {
  const text = nonEmpty(raw)?.trim().toLowerCase();
  if (text === undefined || text === "false") return false;
  if (text === "true") return true;
  problems.push(`${name} must be true or false`);
  return false;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}
