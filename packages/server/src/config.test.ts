import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, loadConfig, loadMasterKeyFile } from "./config.js";

const KEY = Buffer.alloc(32, 7).toString("base64");

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(env, "/srv");
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
}

describe("loadConfig", () => {
  it("defaults to the embedded store in ./data on 127.0.0.1:3000 with a dev key file", () => {
    const config = loadConfig({}, "/srv");
    expect(config).toMatchObject({
      production: false,
      host: "127.0.0.1",
      port: 3000,
      dataDir: "/srv/data",
      database: { kind: "sqlite", path: "/srv/data/tessera.db", walLimitBytes: 64 * 1024 * 1024 },
      masterKey: { provider: "raw", source: { kind: "dev-file", path: "/srv/data/master.key" } },
      tenantKeyCacheMs: 300_000,
      bootstrapKey: undefined,
      logLevel: "info",
      bodyLimit: 1048576,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it("reads every variable", () => {
    const config = loadConfig(
      {
        TESSERA_PORT: "8080",
        TESSERA_HOST: "0.0.0.0",
        TESSERA_DATABASE_URL: "postgres://u:p@db:5432/tessera",
        TESSERA_MASTER_KEY: KEY,
        TESSERA_BOOTSTRAP_KEY: "b".repeat(32),
        TESSERA_LOG_LEVEL: "warn",
        TESSERA_BODY_LIMIT: "2048",
        TESSERA_SWEEP_INTERVAL_MS: "1000",
        NODE_ENV: "production",
      },
      "/srv",
    );
    expect(config).toMatchObject({
      production: true,
      host: "0.0.0.0",
      port: 8080,
      database: { kind: "postgres", url: "postgres://u:p@db:5432/tessera" },
      masterKey: { provider: "raw", source: { kind: "value", key: Buffer.alloc(32, 7) } },
      bootstrapKey: "b".repeat(32),
      logLevel: "warn",
      bodyLimit: 2048,
      sweepIntervalMs: 1000,
    });
  });

  it.each([
    ["sqlite:db/x.db", { kind: "sqlite", path: "/srv/db/x.db", walLimitBytes: 64 * 1024 * 1024 }],
    ["sqlite::memory:", { kind: "sqlite", path: ":memory:", walLimitBytes: 64 * 1024 * 1024 }],
    ["postgresql://localhost/x", { kind: "postgres", url: "postgresql://localhost/x" }],
  ])("parses TESSERA_DATABASE_URL=%s", (url, database) => {
    expect(loadConfig({ TESSERA_DATABASE_URL: url, TESSERA_MASTER_KEY: KEY }, "/srv").database).toEqual(
      database,
    );
  });

  it("reads the SQLite WAL limit in MiB, refusing what is not a whole number from 1 to 65536", () => {
    expect(loadConfig({ TESSERA_SQLITE_WAL_LIMIT_MB: "8" }, "/srv").database).toEqual({
      kind: "sqlite",
      path: "/srv/data/tessera.db",
      walLimitBytes: 8 * 1024 * 1024,
    });
    for (const value of ["0", "65537", "1.5", "64MB"]) {
      expect(problemsOf({ TESSERA_SQLITE_WAL_LIMIT_MB: value })).toEqual([
        "TESSERA_SQLITE_WAL_LIMIT_MB must be an integer from 1 to 65536",
      ]);
    }
  });

  it("reads the reactor sandbox settings, with defaults outside the data dir", () => {
    expect(loadConfig({}, "/srv").reactors).toEqual({
      dir: path.join(os.tmpdir(), "tessera-reactors"),
      egress: "",
      timeoutMs: 30_000,
      maxWorkers: 32,
      workersPerReactor: 2,
      heapMiB: 128,
      rssMiB: 384,
      cgroup: "auto",
      modules: [
        { name: "axios", version: "1.21.1" },
        { name: "node-fetch", version: "2.7.0" },
        { name: "uuid", version: "11.1.1" },
      ],
    });
    const config = loadConfig(
      {
        TESSERA_REACTOR_DIR: "reactors",
        TESSERA_REACTOR_EGRESS: " api.stripe.com,api.adyen.com:443 ",
        TESSERA_REACTOR_TIMEOUT_MS: "5000",
        TESSERA_REACTOR_MAX_WORKERS: "4",
        TESSERA_REACTOR_WORKERS_PER_REACTOR: "3",
        TESSERA_REACTOR_HEAP_MB: "64",
        TESSERA_REACTOR_RSS_MB: "200",
        TESSERA_REACTOR_CGROUP: " Off ",
        TESSERA_REACTOR_MODULES: " uuid , lodash@4.17.21,@scope/pkg@1.0.0-rc.1",
      },
      "/srv",
    );
    expect(config.reactors).toEqual({
      dir: "/srv/reactors",
      egress: "api.stripe.com,api.adyen.com:443",
      timeoutMs: 5000,
      maxWorkers: 4,
      workersPerReactor: 3,
      heapMiB: 64,
      rssMiB: 200,
      cgroup: "off",
      modules: [
        { name: "uuid", version: "11.1.1" },
        { name: "lodash", version: "4.17.21" },
        { name: "@scope/pkg", version: "1.0.0-rc.1" },
      ],
    });
    expect(loadConfig({ TESSERA_REACTOR_MODULES: "none" }, "/srv").reactors.modules).toEqual([]);
    expect(
      problemsOf({
        TESSERA_REACTOR_TIMEOUT_MS: "10",
        TESSERA_REACTOR_MAX_WORKERS: "0",
        TESSERA_REACTOR_WORKERS_PER_REACTOR: "65",
        TESSERA_REACTOR_CGROUP: "on",
      }),
    ).toEqual([
      "TESSERA_REACTOR_TIMEOUT_MS must be an integer from 100 to 210000",
      "TESSERA_REACTOR_MAX_WORKERS must be an integer from 1 to 1000",
      "TESSERA_REACTOR_WORKERS_PER_REACTOR must be an integer from 1 to 64",
      "TESSERA_REACTOR_CGROUP must be auto or off",
    ]);
    expect(
      problemsOf({
        TESSERA_REACTOR_MODULES: "lodash,uuid@^11.0.0,Bad Name@1.0.0,crypto@1.0.0,uuid,uuid@11.0.0",
      }),
    ).toEqual([
      "TESSERA_REACTOR_MODULES: 'lodash' needs an exact version (lodash@1.2.3); only axios, node-fetch, uuid have a default",
      "TESSERA_REACTOR_MODULES: 'uuid@^11.0.0' needs an exact version such as 1.2.3",
      "TESSERA_REACTOR_MODULES: 'Bad Name@1.0.0' is not an npm package name",
      "TESSERA_REACTOR_MODULES: 'crypto@1.0.0' would shadow a module reactors already have",
      "TESSERA_REACTOR_MODULES: 'uuid@11.0.0' is listed twice",
    ]);
  });

  it("reads the webhook and background-work settings, strictly", () => {
    expect(loadConfig({}, "/srv")).toMatchObject({
      webhooks: {
        allowPrivate: false,
        timeoutMs: 10_000,
        retryBaseMs: 5_000,
        maxConcurrentPerDestination: 2,
      },
      jobs: { pollMs: 1_000, concurrency: 4, retentionMs: 168 * 3_600_000, maxQueuedPerTenant: 1_000 },
    });
    expect(
      loadConfig(
        {
          TESSERA_WEBHOOK_ALLOW_PRIVATE: " TRUE ",
          TESSERA_WEBHOOK_TIMEOUT_MS: "2000",
          TESSERA_WEBHOOK_RETRY_BASE_MS: "100",
          TESSERA_JOB_POLL_MS: "50",
          TESSERA_ASYNC_CONCURRENCY: "16",
          TESSERA_INVOCATION_RETENTION_HOURS: "24",
          TESSERA_WEBHOOK_MAX_CONCURRENT_PER_DESTINATION: "8",
          TESSERA_ASYNC_MAX_QUEUED_PER_TENANT: "50",
        },
        "/srv",
      ),
    ).toMatchObject({
      webhooks: { allowPrivate: true, timeoutMs: 2_000, retryBaseMs: 100, maxConcurrentPerDestination: 8 },
      jobs: { pollMs: 50, concurrency: 16, retentionMs: 24 * 3_600_000, maxQueuedPerTenant: 50 },
    });
    expect(
      problemsOf({
        TESSERA_WEBHOOK_ALLOW_PRIVATE: "yes",
        TESSERA_WEBHOOK_TIMEOUT_MS: "99",
        TESSERA_JOB_POLL_MS: "0",
        TESSERA_ASYNC_CONCURRENCY: "1000",
        TESSERA_INVOCATION_RETENTION_HOURS: "0",
        TESSERA_WEBHOOK_MAX_CONCURRENT_PER_DESTINATION: "0",
        TESSERA_ASYNC_MAX_QUEUED_PER_TENANT: "-1",
      }),
    ).toEqual([
      "TESSERA_WEBHOOK_ALLOW_PRIVATE must be true or false",
      "TESSERA_WEBHOOK_TIMEOUT_MS must be an integer from 100 to 60000",
      "TESSERA_WEBHOOK_MAX_CONCURRENT_PER_DESTINATION must be an integer from 1 to 256",
      "TESSERA_JOB_POLL_MS must be an integer from 10 to 60000",
      "TESSERA_ASYNC_CONCURRENCY must be an integer from 1 to 256",
      "TESSERA_INVOCATION_RETENTION_HOURS must be an integer from 1 to 8760",
      "TESSERA_ASYNC_MAX_QUEUED_PER_TENANT must be an integer from 1 to 1000000",
    ]);
  });

  it("serves metrics by default only on loopback, else with a token or when asked", () => {
    const metrics = (env: Record<string, string>) => loadConfig(env, "/srv").metrics;
    const token = "t".repeat(32);
    expect(metrics({})).toEqual({ enabled: true, token: undefined });
    for (const host of ["localhost", "::1", "127.0.0.2"]) {
      expect(metrics({ TESSERA_HOST: host }).enabled).toBe(true);
    }
    for (const host of ["0.0.0.0", "::", "10.0.0.7", "127.example.com"]) {
      expect(metrics({ TESSERA_HOST: host }).enabled).toBe(false);
    }
    expect(metrics({ TESSERA_HOST: "0.0.0.0", TESSERA_METRICS_TOKEN: token })).toEqual({
      enabled: true,
      token,
    });
    expect(metrics({ TESSERA_HOST: "0.0.0.0", TESSERA_METRICS: "true" })).toEqual({
      enabled: true,
      token: undefined,
    });
    expect(metrics({ TESSERA_METRICS: "false", TESSERA_METRICS_TOKEN: token }).enabled).toBe(false);
    expect(
      problemsOf({ TESSERA_MASTER_KEY: KEY, TESSERA_METRICS: "on", TESSERA_METRICS_TOKEN: "t".repeat(31) }),
    ).toEqual([
      "TESSERA_METRICS_TOKEN must be 32 to 1024 printable ASCII characters without spaces",
      "TESSERA_METRICS must be true or false",
    ]);
    expect(problemsOf({ TESSERA_METRICS_TOKEN: `${token} x` })).toHaveLength(1);
  });

  it("serves the console unless TESSERA_CONSOLE_ENABLED is false", () => {
    const consoleOf = (env: Record<string, string>) => loadConfig(env, "/srv").console;
    expect(consoleOf({})).toEqual({ enabled: true });
    expect(consoleOf({ TESSERA_CONSOLE_ENABLED: " " })).toEqual({ enabled: true });
    expect(consoleOf({ TESSERA_CONSOLE_ENABLED: "TRUE" })).toEqual({ enabled: true });
    expect(consoleOf({ TESSERA_CONSOLE_ENABLED: "false" })).toEqual({ enabled: false });
    expect(problemsOf({ TESSERA_MASTER_KEY: KEY, TESSERA_CONSOLE_ENABLED: "no" })).toEqual([
      "TESSERA_CONSOLE_ENABLED must be true or false",
    ]);
  });

  it("reports every problem at once", () => {
    expect(
      problemsOf({
        TESSERA_PORT: "http",
        TESSERA_DATABASE_URL: "mysql://x",
        TESSERA_MASTER_KEY: "short",
        TESSERA_BOOTSTRAP_KEY: "tiny",
        TESSERA_LOG_LEVEL: "loud",
        TESSERA_BODY_LIMIT: "-1",
      }),
    ).toEqual([
      "TESSERA_PORT must be an integer from 0 to 65535",
      "TESSERA_BODY_LIMIT must be an integer from 1024 to 67108864",
      "TESSERA_DATABASE_URL must be sqlite:<path>, sqlite::memory: or postgres://user:password@host:port/db",
      "TESSERA_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent",
      "TESSERA_BOOTSTRAP_KEY must be at least 32 characters",
      "TESSERA_MASTER_KEY must be 32 bytes encoded in base64",
    ]);
  });

  it("refuses production without a master key", () => {
    expect(problemsOf({ NODE_ENV: "production" })).toEqual([
      "NODE_ENV=production requires TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE",
    ]);
  });

  it("refuses a PostgreSQL store without a master key, even in development", () => {
    expect(problemsOf({ TESSERA_DATABASE_URL: "postgres://localhost/x" })).toEqual([
      "a PostgreSQL store requires TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE",
    ]);
  });

  it("refuses two master key sources", () => {
    expect(problemsOf({ TESSERA_MASTER_KEY: KEY, TESSERA_MASTER_KEY_FILE: "/k" })).toEqual([
      "set only one of TESSERA_MASTER_KEY and TESSERA_MASTER_KEY_FILE",
    ]);
  });

  it("accepts a key file in production", () => {
    const config = loadConfig(
      { NODE_ENV: "production", TESSERA_MASTER_KEY_FILE: "secrets/master.key" },
      "/srv",
    );
    expect(config.masterKey).toEqual({
      provider: "raw",
      source: { kind: "file", path: "/srv/secrets/master.key" },
    });
  });
});

describe("loadConfig: master key providers", () => {
  const PKCS11 = {
    TESSERA_MASTER_KEY_PROVIDER: "pkcs11",
    TESSERA_PKCS11_MODULE: "/usr/lib/softhsm/libsofthsm2.so",
    TESSERA_PKCS11_TOKEN_LABEL: "tessera",
    TESSERA_PKCS11_PIN_FILE: "secrets/pin",
    TESSERA_PKCS11_KEY_LABEL: "tessera-master",
  };
  const COMMAND = {
    TESSERA_MASTER_KEY_PROVIDER: "command",
    TESSERA_KMS_KEY_ID: "alias/tessera",
    TESSERA_KMS_WRAP_COMMAND: '["/usr/local/bin/aws", "kms", "encrypt"]',
    TESSERA_KMS_UNWRAP_COMMAND: '["/usr/local/bin/aws", "kms", "decrypt"]',
  };

  it("reads the pkcs11 provider, with the PIN file resolved and the slot as a number", () => {
    expect(loadConfig({ ...PKCS11, NODE_ENV: "production" }, "/srv").masterKey).toEqual({
      provider: "pkcs11",
      pkcs11: {
        module: "/usr/lib/softhsm/libsofthsm2.so",
        token: { label: "tessera" },
        pinFile: "/srv/secrets/pin",
        keyLabel: "tessera-master",
        gcmIv: "random",
      },
    });
    expect(loadConfig({ ...PKCS11, TESSERA_PKCS11_GCM_IV: "token" }, "/srv").masterKey).toMatchObject({
      pkcs11: { gcmIv: "token" },
    });
    expect(problemsOf({ ...PKCS11, TESSERA_PKCS11_GCM_IV: "hsm" })).toEqual([
      "TESSERA_PKCS11_GCM_IV must be random or token",
    ]);
    const bySlot = { ...PKCS11, TESSERA_PKCS11_TOKEN_LABEL: "", TESSERA_PKCS11_SLOT: "0x2a3b4c5d" };
    expect(loadConfig(bySlot, "/srv").masterKey).toMatchObject({ pkcs11: { token: { slot: 0x2a3b4c5dn } } });
    expect(loadConfig({ ...bySlot, TESSERA_PKCS11_SLOT: "7" }, "/srv").masterKey).toMatchObject({
      pkcs11: { token: { slot: 7n } },
    });
  });

  it("reports every missing or contradictory pkcs11 setting", () => {
    expect(problemsOf({ TESSERA_MASTER_KEY_PROVIDER: "pkcs11" })).toEqual([
      "TESSERA_PKCS11_MODULE: the path of the PKCS#11 library is required",
      "set one of TESSERA_PKCS11_TOKEN_LABEL and TESSERA_PKCS11_SLOT to choose the token",
      "TESSERA_PKCS11_PIN_FILE: a file holding the token's user PIN is required (never the PIN itself)",
      "TESSERA_PKCS11_KEY_LABEL: the label of the AES key is required",
    ]);
    expect(problemsOf({ ...PKCS11, TESSERA_PKCS11_SLOT: "3" })).toEqual([
      "set one of TESSERA_PKCS11_TOKEN_LABEL and TESSERA_PKCS11_SLOT to choose the token",
    ]);
    expect(problemsOf({ ...PKCS11, TESSERA_PKCS11_TOKEN_LABEL: "", TESSERA_PKCS11_SLOT: "slot-3" })).toEqual([
      "TESSERA_PKCS11_SLOT must be a slot id: decimal, or hexadecimal with 0x",
    ]);
  });

  it("reads the command provider, with its defaults and the variables it passes on", () => {
    expect(loadConfig(COMMAND, "/srv").masterKey).toEqual({
      provider: "command",
      command: {
        keyId: "alias/tessera",
        wrap: ["/usr/local/bin/aws", "kms", "encrypt"],
        unwrap: ["/usr/local/bin/aws", "kms", "decrypt"],
        encoding: "base64",
        timeoutMs: 10_000,
        env: [],
      },
    });
    const tuned = {
      ...COMMAND,
      TESSERA_KMS_ENCODING: "binary",
      TESSERA_KMS_TIMEOUT_MS: "2500",
      TESSERA_KMS_ENV: "AWS_REGION, HOME,AWS_REGION",
      TESSERA_TENANT_KEY_CACHE_SECONDS: "60",
    };
    const config = loadConfig(tuned, "/srv");
    expect(config.masterKey).toMatchObject({
      command: { encoding: "binary", timeoutMs: 2500, env: ["AWS_REGION", "HOME"] },
    });
    expect(config.tenantKeyCacheMs).toBe(60_000);
  });

  it("refuses a command that is not an argv array with an absolute program, and other bad values", () => {
    expect(
      problemsOf({
        ...COMMAND,
        TESSERA_KMS_KEY_ID: "",
        TESSERA_KMS_WRAP_COMMAND: "aws kms encrypt",
        TESSERA_KMS_UNWRAP_COMMAND: '["aws", "kms", "decrypt"]',
        TESSERA_KMS_ENCODING: "hex",
        TESSERA_KMS_TIMEOUT_MS: "50",
        TESSERA_KMS_ENV: "AWS_REGION,$HOME",
        TESSERA_TENANT_KEY_CACHE_SECONDS: "0",
      }),
    ).toEqual([
      "TESSERA_KMS_KEY_ID: the KMS key's name (an ARN, a resource name) is required",
      'TESSERA_KMS_WRAP_COMMAND must be a JSON array of 1 to 64 strings, like ["/usr/local/bin/aws", "kms", "encrypt", ...]',
      'TESSERA_KMS_UNWRAP_COMMAND: the program must be an absolute path ("aws" is not)',
      "TESSERA_KMS_ENCODING must be base64 or binary",
      "TESSERA_KMS_TIMEOUT_MS must be an integer from 100 to 120000",
      "TESSERA_KMS_ENV must list variable names, comma-separated (not: $HOME)",
      "TESSERA_TENANT_KEY_CACHE_SECONDS must be an integer from 1 to 86400",
    ]);
  });

  it("refuses an unknown provider, and settings of a provider that is not the chosen one", () => {
    expect(problemsOf({ TESSERA_MASTER_KEY_PROVIDER: "vault" })).toEqual([
      "TESSERA_MASTER_KEY_PROVIDER must be one of raw, pkcs11, command",
    ]);
    expect(problemsOf({ ...PKCS11, TESSERA_MASTER_KEY: KEY, TESSERA_KMS_KEY_ID: "alias/x" })).toEqual([
      "TESSERA_MASTER_KEY is set, but TESSERA_MASTER_KEY_PROVIDER is pkcs11, not raw",
      "TESSERA_KMS_KEY_ID is set, but TESSERA_MASTER_KEY_PROVIDER is pkcs11, not command",
    ]);
    expect(problemsOf({ TESSERA_MASTER_KEY: KEY, TESSERA_PKCS11_MODULE: "/x.so" })).toEqual([
      "TESSERA_PKCS11_MODULE is set, but TESSERA_MASTER_KEY_PROVIDER is raw, not pkcs11",
    ]);
  });

  it("needs no raw key for an HSM or a KMS, in production or on PostgreSQL", () => {
    const env = { NODE_ENV: "production", TESSERA_DATABASE_URL: "postgres://localhost/x" };
    expect(problemsOf({ ...env, ...PKCS11 })).toEqual([]);
    expect(problemsOf({ ...env, ...COMMAND })).toEqual([]);
  });
});

describe("loadConfig: limits", () => {
  it("has defaults that leave a normal client alone and stop a flood", () => {
    expect(loadConfig({}, "/srv").limits).toEqual({
      trustProxy: false,
      perKey: { perSecond: 1_000, burst: 2_000 },
      perPublicKey: { perSecond: 100, burst: 200 },
      perSession: { perSecond: 10, burst: 20 },
      perAddress: { perSecond: 2_000, burst: 4_000 },
      authFailures: { perSecond: 1, burst: 30 },
      dataTerms: { perSecond: 10, burst: 600 },
      maxEntries: 100_000,
      searches: { limit: 32, queue: 64 },
      reacts: { limit: 64, queue: 64 },
      queueTimeoutMs: 10_000,
      pressure: { maxEventLoopDelayMs: 1_000, maxHeapUsedPercent: 90, maxRssMiB: 0 },
    });
  });

  it("reads every variable, and 0 turns a limit off", () => {
    const config = loadConfig(
      {
        TESSERA_TRUST_PROXY: "2",
        TESSERA_RATE_LIMIT_KEY_PER_SECOND: "10",
        TESSERA_RATE_LIMIT_KEY_BURST: "20",
        TESSERA_RATE_LIMIT_PUBLIC_KEY_PER_SECOND: "3",
        TESSERA_RATE_LIMIT_PUBLIC_KEY_BURST: "6",
        TESSERA_RATE_LIMIT_SESSION_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_SESSION_BURST: "9",
        TESSERA_RATE_LIMIT_ADDRESS_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_ADDRESS_BURST: "5",
        TESSERA_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: "6",
        TESSERA_RATE_LIMIT_AUTH_FAILURES_BURST: "3",
        TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE: "120",
        TESSERA_RATE_LIMIT_MAX_ENTRIES: "1000",
        TESSERA_MAX_CONCURRENT_SEARCHES: "4",
        TESSERA_MAX_QUEUED_SEARCHES: "0",
        TESSERA_MAX_CONCURRENT_REACTS: "8",
        TESSERA_MAX_QUEUED_REACTS: "16",
        TESSERA_QUEUE_TIMEOUT_MS: "2500",
        TESSERA_MAX_EVENT_LOOP_DELAY_MS: "0",
        TESSERA_MAX_HEAP_USED_PERCENT: "0",
        TESSERA_MAX_RSS_MB: "2048",
      },
      "/srv",
    );
    expect(config.limits).toEqual({
      trustProxy: 2,
      perKey: { perSecond: 10, burst: 20 },
      perPublicKey: { perSecond: 3, burst: 6 },
      perSession: undefined,
      perAddress: undefined,
      authFailures: { perSecond: 0.1, burst: 3 },
      dataTerms: { perSecond: 2, burst: 120 },
      maxEntries: 1_000,
      searches: { limit: 4, queue: 0 },
      reacts: { limit: 8, queue: 16 },
      queueTimeoutMs: 2_500,
      pressure: { maxEventLoopDelayMs: 0, maxHeapUsedPercent: 0, maxRssMiB: 2_048 },
    });
    expect(Object.isFrozen(config.limits)).toBe(true);
    expect(
      loadConfig({
        TESSERA_RATE_LIMIT_KEY_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: "0",
        TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE: "0",
      }).limits,
    ).toMatchObject({ perKey: undefined, authFailures: undefined, dataTerms: undefined });
  });

  it.each([
    ["true", true],
    [" FALSE ", false],
    ["1", 1],
    ["loopback", ["loopback"]],
    [
      "10.0.0.0/8, 192.0.2.7,2001:db8::/32,uniquelocal",
      ["10.0.0.0/8", "192.0.2.7", "2001:db8::/32", "uniquelocal"],
    ],
  ])("reads TESSERA_TRUST_PROXY=%s", (value, trustProxy) => {
    expect(loadConfig({ TESSERA_TRUST_PROXY: value }, "/srv").limits.trustProxy).toEqual(trustProxy);
  });

  it("refuses what it cannot read, naming the variable", () => {
    const proxyProblem =
      "TESSERA_TRUST_PROXY must be true, false, a hop count from 1 to 100, or a comma-separated list of " +
      "addresses, CIDR ranges, loopback, linklocal or uniquelocal";
    for (const value of [
      "0",
      "101",
      "yes",
      "10.0.0.0/33",
      "2001:db8::/129",
      "10.0.0.1/8/8",
      "proxy.local",
      "10.0.0.1,",
    ]) {
      expect(problemsOf({ TESSERA_TRUST_PROXY: value }), value).toEqual([proxyProblem]);
    }
    expect(
      problemsOf({
        TESSERA_RATE_LIMIT_KEY_PER_SECOND: "-1",
        TESSERA_RATE_LIMIT_KEY_BURST: "0",
        TESSERA_RATE_LIMIT_ADDRESS_PER_SECOND: "1.5",
        TESSERA_RATE_LIMIT_MAX_ENTRIES: "0",
        TESSERA_MAX_CONCURRENT_SEARCHES: "0",
        TESSERA_MAX_QUEUED_REACTS: "many",
        TESSERA_QUEUE_TIMEOUT_MS: "0",
        TESSERA_MAX_HEAP_USED_PERCENT: "101",
      }),
    ).toEqual([
      "TESSERA_RATE_LIMIT_KEY_PER_SECOND must be an integer from 0 to 1000000",
      "TESSERA_RATE_LIMIT_KEY_BURST must be an integer from 1 to 1000000",
      "TESSERA_RATE_LIMIT_ADDRESS_PER_SECOND must be an integer from 0 to 1000000",
      "TESSERA_RATE_LIMIT_MAX_ENTRIES must be an integer from 1 to 10000000",
      "TESSERA_MAX_CONCURRENT_SEARCHES must be an integer from 1 to 10000",
      "TESSERA_MAX_QUEUED_REACTS must be an integer from 0 to 100000",
      "TESSERA_QUEUE_TIMEOUT_MS must be an integer from 1 to 600000",
      "TESSERA_MAX_HEAP_USED_PERCENT must be an integer from 0 to 100",
    ]);
    // One query may hold 64 data: terms: a smaller allowance would refuse it forever.
    expect(problemsOf({ TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE: "63" })).toEqual([
      "TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE must be 0 (off) or at least 64",
    ]);
    expect(problemsOf({ TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE: "lots" })).toEqual([
      "TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE must be an integer from 0 to 1000000",
    ]);
    expect(loadConfig({ TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE: "64" }).limits.dataTerms).toEqual({
      perSecond: 64 / 60,
      burst: 64,
    });
  });
});

describe("loadConfig: the previous master key during a rotation", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "tessera-previous-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    const where = path.join(dir, name);
    writeFileSync(where, text);
    return where;
  };
  const raw = Buffer.alloc(32, 7).toString("base64");

  it("reads a provider's settings from TESSERA_MASTER_KEY_PREVIOUS_FILE, and the --to file the same way", () => {
    const previous = file("raw.env", `# the old key\nTESSERA_MASTER_KEY=${raw}\n`);
    const config = loadConfig({ TESSERA_MASTER_KEY_PREVIOUS_FILE: previous }, dir);
    expect(config.previousMasterKey).toEqual({
      provider: "raw",
      source: { kind: "value", key: Buffer.from(raw, "base64") },
    });
    expect(loadConfig({}, dir).previousMasterKey).toBeUndefined();
    const hsm = file(
      "hsm.env",
      "TESSERA_MASTER_KEY_PROVIDER=pkcs11\nTESSERA_PKCS11_MODULE=/usr/lib/softhsm/libsofthsm2.so\n" +
        "TESSERA_PKCS11_TOKEN_LABEL=tessera\nTESSERA_PKCS11_PIN_FILE=pin\nTESSERA_PKCS11_KEY_LABEL=master\n",
    );
    expect(loadMasterKeyFile(hsm, dir)).toMatchObject({
      provider: "pkcs11",
      pkcs11: { pinFile: path.join(dir, "pin"), keyLabel: "master" },
    });
  });

  it("refuses a file that is missing, holds other settings, or names no raw key", () => {
    const problems = (text: string | undefined) => {
      const where = text === undefined ? path.join(dir, "missing.env") : file("bad.env", text);
      try {
        loadConfig({ TESSERA_MASTER_KEY_PREVIOUS_FILE: where }, dir);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as ConfigError).problems;
      }
      throw new Error("accepted");
    };
    expect(problems(undefined)).toEqual([
      `TESSERA_MASTER_KEY_PREVIOUS_FILE: cannot read ${path.join(dir, "missing.env")} (ENOENT)`,
    ]);
    expect(problems(`TESSERA_MASTER_KEY=${raw}\nTESSERA_PORT=1\n`)).toEqual([
      `TESSERA_MASTER_KEY_PREVIOUS_FILE (${path.join(dir, "bad.env")}): may hold only a master key provider and its settings, not TESSERA_PORT`,
    ]);
    expect(problems("TESSERA_MASTER_KEY_PROVIDER=raw\n")).toEqual([
      `TESSERA_MASTER_KEY_PREVIOUS_FILE (${path.join(dir, "bad.env")}): a raw master key needs TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE`,
    ]);
    expect(() => loadMasterKeyFile(path.join(dir, "missing.env"), dir)).toThrow(ConfigError);
  });
});

describe("loadConfig: sessions and CORS", () => {
  it("defaults to 3-minute sessions (at most an hour) and CORS off", () => {
    const config = loadConfig({}, "/srv");
    expect(config.sessions).toEqual({ ttlMs: 180_000, maxTtlMs: 3_600_000 });
    expect(config.cors).toEqual({ origins: [], maxAgeSeconds: 600 });
  });

  it("reads exact origins, as a browser writes them, once each", () => {
    const config = loadConfig(
      {
        TESSERA_SESSION_TTL_SECONDS: "60",
        TESSERA_SESSION_MAX_TTL_SECONDS: "600",
        TESSERA_CORS_ORIGINS:
          " https://Shop.example.com , http://127.0.0.1:8080,https://shop.example.com:443",
        TESSERA_CORS_MAX_AGE_SECONDS: "0",
      },
      "/srv",
    );
    expect(config.sessions).toEqual({ ttlMs: 60_000, maxTtlMs: 600_000 });
    expect(config.cors).toEqual({
      origins: ["https://shop.example.com", "http://127.0.0.1:8080"],
      maxAgeSeconds: 0,
    });
  });

  it("refuses wildcards, paths and lifetimes that contradict each other, all at once", () => {
    expect(
      problemsOf({
        TESSERA_CORS_ORIGINS: "*,https://a.example/checkout,https://*.example.com",
        TESSERA_SESSION_TTL_SECONDS: "900",
        TESSERA_SESSION_MAX_TTL_SECONDS: "600",
        TESSERA_CORS_MAX_AGE_SECONDS: "-1",
      }),
    ).toEqual([
      "TESSERA_SESSION_MAX_TTL_SECONDS must be at least TESSERA_SESSION_TTL_SECONDS",
      'TESSERA_CORS_ORIGINS: "*" is not an origin: give scheme://host[:port] of a page, without path or wildcard',
      'TESSERA_CORS_ORIGINS: "https://a.example/checkout" is not an origin: give scheme://host[:port] of a page, without path or wildcard',
      'TESSERA_CORS_ORIGINS: "https://*.example.com" is not an origin: give scheme://host[:port] of a page, without path or wildcard',
      "TESSERA_CORS_MAX_AGE_SECONDS must be an integer from 0 to 86400",
    ]);
  });
});
