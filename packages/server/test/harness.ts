import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import type { LevelWithSilent } from "pino";
import { expect, inject } from "vitest";
import type { Clock } from "../src/shared/clock.js";
import { loadConfig } from "../src/config.js";
import { serve, type RunningServer } from "../src/main.js";
import { type Store } from "../src/storage/database.js";
import { openStore } from "../src/storage/open.js";
import { createLogger } from "../src/observability/logging.js";

/** Which store this vitest project runs against (vitest.config.ts defines one project per store). */
export const STORE = process.env.TESSERA_TEST_STORE === "postgres" ? "postgres" : "sqlite";
export const STORE_UNAVAILABLE = STORE === "postgres" && inject("postgresAdminUrl") === null;

export const TEST_MASTER_KEY = randomBytes(32).toString("base64");

export interface TestDatabase {
  readonly env: Record<string, string>;
  readonly dataDir: string;
  /** A store of its own on this database, as another process (the CLI, a second server) would open it. */
  open(): Store;
  drop(): Promise<void>;
}

/** A fresh, empty store for one test file: a SQLite file in a temp dir, or a new database in the test cluster. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const dataDir = mkdtempSync(path.join(tmpdir(), "tessera-test-"));
  const removeDir = () => rmSync(dataDir, { recursive: true, force: true });
  const opener = (env: Record<string, string>) => () =>
    openStore(loadConfig({ ...env, TESSERA_MASTER_KEY: TEST_MASTER_KEY }).database);
  if (STORE === "sqlite") {
    const env = {
      TESSERA_DATA_DIR: dataDir,
      TESSERA_DATABASE_URL: `sqlite:${path.join(dataDir, "tessera.db")}`,
    };
    return { dataDir, env, open: opener(env), drop: () => Promise.resolve(removeDir()) };
  }
  const adminUrl = inject("postgresAdminUrl");
  if (adminUrl === null) throw new Error("no PostgreSQL for this run");
  const name = `tessera_test_${randomBytes(6).toString("hex")}`;
  await withAdmin(adminUrl, (client) => client.query(`create database ${name}`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const env = { TESSERA_DATA_DIR: dataDir, TESSERA_DATABASE_URL: url.toString() };
  return {
    dataDir,
    env,
    open: opener(env),
    drop: async () => {
      removeDir();
      await withAdmin(adminUrl, (client) => client.query(`drop database if exists ${name} with (force)`));
    },
  };
}

async function withAdmin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export class ManualClock implements Clock {
  private current: number;
  constructor(start = Date.now()) {
    this.current = start;
  }
  now(): Date {
    return new Date(this.current);
  }
  advance(ms: number): void {
    this.current += ms;
  }
}

export interface TestResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  readonly body: any;
}

export interface RequestOptions {
  /** `null` sends no key; default is the bootstrap management key. */
  readonly key?: string | null;
  readonly body?: unknown;
  /** Sent as is, with `contentType` (default application/json). */
  readonly rawBody?: string;
  readonly contentType?: string;
  readonly headers?: Record<string, string>;
}

export interface TestServer {
  /** Changes with a restart (each start takes a free port). */
  readonly url: string;
  readonly bootstrapKey: string;
  readonly clock: ManualClock;
  readonly database: TestDatabase;
  request(method: string, path: string, options?: RequestOptions): Promise<TestResponse>;
  /** Stops the server as SIGTERM would and starts it again on the same store, clock and configuration. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  /** Receives every log line (one JSON object each); without it the server logs nothing. */
  readonly logSink?: (line: string) => void;
  /** Defaults to "trace" with a `logSink`, else "silent". */
  readonly logLevel?: LevelWithSilent;
  /**
   * Another instance on this server's store (several instances on one PostgreSQL): same database, bootstrap key
   * and clock; closing it leaves the store to the first.
   */
  readonly sharing?: Pick<TestServer, "database" | "bootstrapKey" | "clock">;
}

/** The real server (`serve` from main.ts) on the store under test, over real HTTP on loopback. */
export async function startTestServer(
  env: Record<string, string> = {},
  options: TestServerOptions = {},
): Promise<TestServer> {
  const database = options.sharing?.database ?? (await createTestDatabase());
  const bootstrapKey = options.sharing?.bootstrapKey ?? `test-bootstrap-${randomBytes(24).toString("hex")}`;
  const dropDatabase = () => (options.sharing === undefined ? database.drop() : Promise.resolve());
  // Instances on one store share time, as real ones do: leases and pauses written by one are read by the other.
  const clock = options.sharing?.clock ?? new ManualClock();
  let server: RunningServer;
  const start = () =>
    serve(
      loadConfig({
        ...database.env,
        TESSERA_PORT: "0",
        TESSERA_MASTER_KEY: TEST_MASTER_KEY,
        TESSERA_BOOTSTRAP_KEY: bootstrapKey,
        // Short, so that sweeper tests wait for a real sweep rather than calling it by hand.
        TESSERA_SWEEP_INTERVAL_MS: "200",
        // Tests send bursts from one loopback address and key (fuzzing, bad keys on purpose): the limits have their
        // own tests (limits/limits.test.ts), which set them explicitly.
        TESSERA_RATE_LIMIT_KEY_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_PUBLIC_KEY_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_SESSION_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_ADDRESS_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: "0",
        TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE: "0",
        TESSERA_MAX_EVENT_LOOP_DELAY_MS: "0",
        ...env,
      }),
      { write: () => true },
      { log: testLogger(options), clock },
    );
  try {
    server = await start();
  } catch (error) {
    await dropDatabase();
    throw error;
  }
  return {
    get url() {
      return server.url;
    },
    bootstrapKey,
    clock,
    database,
    request: (method, path, options = {}) => send(server.url, bootstrapKey, method, path, options),
    restart: async () => {
      await server.close();
      server = await start();
    },
    close: async () => {
      await server.close();
      await dropDatabase();
    },
  };
}

/** The server's own logger (observability/logging.ts), writing to the sink if there is one. */
function testLogger({ logSink, logLevel }: TestServerOptions) {
  const level = logLevel ?? (logSink === undefined ? "silent" : "trace");
  return logSink === undefined
    ? createLogger(level)
    : createLogger(level, { write: (line) => logSink(line) });
}

export async function send(
  baseUrl: string,
  defaultKey: string | null,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<TestResponse> {
  const headers: Record<string, string> = { ...options.headers };
  const key = options.key === undefined ? defaultKey : options.key;
  if (key !== null) headers["svc-api-key"] = key;
  let body: string | undefined;
  if (options.rawBody !== undefined || options.body !== undefined) {
    body = options.rawBody ?? JSON.stringify(options.body);
    headers["content-type"] = options.contentType ?? "application/json";
  }
  const response = await fetch(baseUrl + path, { method, headers, body });
  const text = await response.text();
  let parsed: unknown;
  try {
    parsed = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, text, body: parsed };
}

/** Asserts an RFC 9457 problem with the given status (and, when given, code and field errors). */
export function expectProblem(
  response: TestResponse,
  status: number,
  expected: { code?: string; errors?: Record<string, string[] | undefined>; detail?: RegExp } = {},
): void {
  expect(response.status, response.text).toBe(status);
  expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(response.body).toMatchObject({
    status,
    title: expect.any(String),
    type: expect.stringMatching(/^urn:tessera:problem:/),
  });
  if (expected.code !== undefined) expect(response.body.type).toBe(`urn:tessera:problem:${expected.code}`);
  if (expected.detail !== undefined) expect(response.body.detail).toMatch(expected.detail);
  if (expected.errors !== undefined) {
    for (const [field, messages] of Object.entries(expected.errors)) {
      if (messages === undefined) expect(response.body.errors?.[field]).toBeUndefined();
      else expect(response.body.errors?.[field], JSON.stringify(response.body.errors)).toEqual(messages);
    }
  }
}
