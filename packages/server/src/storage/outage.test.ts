import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import SQLite from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../config.js";
import { serve, type RunningServer } from "../main.js";
import { createLogger } from "../observability/logging.js";
import {
  STORE,
  TEST_MASTER_KEY,
  expectProblem,
  send,
  startTestServer,
  type TestResponse,
  type TestServer,
} from "../../test/harness.js";
import { findPostgresBin, startCluster, type Cluster } from "../../test/postgres-cluster.js";
import { storeOutage } from "./availability.js";

const POSTGRES_BIN = findPostgresBin();
const BOOTSTRAP_KEY = `outage-bootstrap-${"k".repeat(32)}`;
const TOKEN = { type: "token", data: "outage" };

/** Polls until `check` holds; the bound is generous, for a loaded machine. */
async function until(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function expectStoreUnavailable(response: TestResponse): void {
  expectProblem(response, 503, {
    code: "store-unavailable",
    detail: /^The vault's store is unavailable: the database cannot be reached\. Retry after 5 s\.$/,
  });
  expect(response.body.title).toBe("Store unavailable");
  expect(response.headers.get("retry-after")).toBe("5");
  // The caller learns nothing of where the database is or who logs in to it.
  expect(response.text).not.toMatch(/127\.0\.0\.1|tessera@|ECONNREFUSED|postgres/i);
}

/**
 * The database goes away under a running server and comes back (issue 16). This file starts a cluster of its
 * own, so stopping it disturbs no other test file; it runs once, in the postgres project.
 */
describe.skipIf(STORE !== "postgres" || POSTGRES_BIN === undefined)(
  "PostgreSQL stops under a running server",
  () => {
    let cluster: Cluster;
    let server: RunningServer;
    const logs: Record<string, unknown>[] = [];

    beforeAll(async () => {
      cluster = await startCluster(POSTGRES_BIN!);
      const dataDir = mkdtempSync(path.join(tmpdir(), "tessera-outage-"));
      const config = loadConfig({
        TESSERA_DATABASE_URL: cluster.url,
        TESSERA_DATA_DIR: dataDir,
        TESSERA_PORT: "0",
        TESSERA_MASTER_KEY: TEST_MASTER_KEY,
        TESSERA_BOOTSTRAP_KEY: BOOTSTRAP_KEY,
        // Every loop polls several times a second, so that an outage of a few seconds is many failed attempts.
        TESSERA_JOB_POLL_MS: "100",
        TESSERA_SWEEP_INTERVAL_MS: "100",
        TESSERA_RATE_LIMIT_KEY_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_ADDRESS_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: "0",
        TESSERA_MAX_EVENT_LOOP_DELAY_MS: "0",
      });
      // The server's own logger settings, its lines kept for the assertions.
      const log = createLogger("info", {
        write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>),
      });
      server = await serve(config, { write: () => true }, { log });
      rmSync(dataDir, { recursive: true, force: true });
    });

    afterAll(async () => {
      // The database must be up for a clean shutdown to seal and close; a failed test may have left it down.
      cluster?.resume();
      await server?.close();
      cluster?.stop();
    });

    const request = (method: string, route: string, body?: unknown) =>
      send(server.url, BOOTSTRAP_KEY, method, route, body === undefined ? {} : { body });

    it("answers 503 store-unavailable with Retry-After, fails /readyz, logs each loop once each way, and recovers", async () => {
      const app = await request("POST", "/applications", {
        name: "writer",
        type: "private",
        rules: [
          { priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read"] },
        ],
      });
      expect(app.status, app.text).toBe(201);
      const key: string = app.body.key;
      const created = await send(server.url, key, "POST", "/tokens", { body: TOKEN });
      expect(created.status, created.text).toBe(201);
      expect((await request("GET", "/readyz")).status).toBe(200);

      const before = logs.length;
      cluster.halt();

      const [create, read, list, ready, alive] = await Promise.all([
        send(server.url, key, "POST", "/tokens", { body: TOKEN }),
        send(server.url, key, "GET", `/tokens/${created.body.id}`),
        request("GET", "/applications"),
        request("GET", "/readyz"),
        request("GET", "/healthz"),
      ]);
      for (const response of [create, read, list, ready]) expectStoreUnavailable(response);
      // The process itself is fine: a supervisor must not restart it for an outage of its database.
      expect(alive.status).toBe(200);

      const during = () => logs.slice(before);
      const loops = ["reactor invocations", "webhook deliveries", "audit sealer", "expiry sweeper"];
      const wentAway = (loop: string) =>
        during().filter((line) => String(line.msg).startsWith(`${loop}: the store is unavailable`));
      await until(() => loops.every((loop) => wentAway(loop).length > 0), "every loop to notice the outage");
      // Two seconds: twenty polls of each loop, every one of them failing.
      await new Promise((resolve) => setTimeout(resolve, 2_000));
      for (const loop of loops) {
        expect(wentAway(loop), loop).toHaveLength(1);
        // Refused, or lost mid-query, or told the server is shutting down: whichever the loop met first.
        expect(wentAway(loop)[0]).toMatchObject({
          level: 40,
          loop,
          outage: expect.stringMatching(/^(refused|unreachable|shutdown)$/),
        });
      }
      // No error lines and no stack traces from the loops: only the requests above are logged, at warn.
      const errors = during().filter((line) => Number(line.level) >= 50);
      expect(errors, JSON.stringify(errors.slice(0, 3))).toEqual([]);
      expect(JSON.stringify(during())).not.toContain('"stack"');
      const refused = during().filter((line) => line.msg === "store unavailable");
      expect(refused.length).toBeGreaterThanOrEqual(4);
      for (const line of refused) expect(line).toMatchObject({ level: 40, outage: expect.any(String) });

      cluster.resume();

      await until(async () => (await request("GET", "/readyz")).status === 200, "/readyz to pass again");
      const again = await send(server.url, key, "POST", "/tokens", { body: TOKEN });
      expect(again.status, again.text).toBe(201);
      expect((await send(server.url, key, "GET", `/tokens/${created.body.id}`)).status).toBe(200);
      const cameBack = (loop: string) =>
        during().filter((line) => line.msg === `${loop}: the store is back; resumed`);
      await until(() => loops.every((loop) => cameBack(loop).length > 0), "every loop to resume");
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      for (const loop of loops) {
        expect(cameBack(loop), loop).toHaveLength(1);
        expect(wentAway(loop), loop).toHaveLength(1);
      }
    });
  },
);

/** SQLite's answers when it cannot serve, read from the engine itself rather than made up. */
describe.skipIf(STORE !== "sqlite")("SQLite errors that mean the store cannot serve", () => {
  let dir: string;

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), "tessera-sqlite-outage-"));
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const errorOf = (fn: () => unknown): unknown => {
    try {
      fn();
    } catch (error) {
      return error;
    }
    throw new Error("expected an error");
  };

  it("reads busy beyond the timeout as transient, disk full and read-only as waiting for an operator", () => {
    const file = path.join(dir, "engine.db");
    const holder = new SQLite(file);
    holder.exec("create table t (x integer)");
    const waiter = new SQLite(file, { timeout: 0 });
    const readOnly = new SQLite(file, { readonly: true });
    const small = new SQLite(":memory:");
    try {
      holder.exec("begin immediate");
      const busy = errorOf(() => waiter.exec("insert into t values (1)"));
      holder.exec("rollback");
      const readonly = errorOf(() => readOnly.exec("insert into t values (1)"));
      small.exec("create table t (x text)");
      small.pragma(`max_page_count = ${small.pragma("page_count", { simple: true }) as number}`);
      const full = errorOf(() => small.exec("insert into t values (randomblob(100000))"));
      const constraint = errorOf(() => small.exec("create table t (x)"));

      expect(storeOutage(busy)).toEqual({
        reason: "busy",
        description: "the database file is locked by another connection",
        retryAfterSeconds: 1,
      });
      expect(storeOutage(full)).toEqual({ reason: "disk-full", description: "the disk is full" });
      expect(storeOutage(readonly)).toEqual({
        reason: "read-only",
        description: "the database file cannot be written",
      });
      // A failure of the statement itself is not an outage: it stays a 500 (or whatever its own mapping says).
      expect(storeOutage(constraint)).toBeUndefined();
      expect(storeOutage(new Error("boom"))).toBeUndefined();
    } finally {
      for (const connection of [holder, waiter, readOnly, small]) connection.close();
    }
  });
});

/**
 * PostgreSQL's side, by the SQLSTATE and messages pg reports (the stop and restart above, and the CLI's start
 * tests, meet refused, lost, auth, DNS and TLS for real). Pure, so it runs once, in the sqlite project.
 */
describe.skipIf(STORE !== "sqlite")("PostgreSQL errors that mean the store cannot serve", () => {
  const pgError = (code: string, message = "m") => Object.assign(new Error(message), { code });
  it.each([
    ["57P01 admin shutdown", pgError("57P01"), "shutdown", 5],
    ["57P03 starting up", pgError("57P03"), "shutdown", 5],
    ["53300 too many connections", pgError("53300"), "shutdown", 5],
    ["08006 connection failure", pgError("08006"), "shutdown", 5],
    ["25006 a standby refusing writes", pgError("25006"), "read-only", 5],
    ["28P01 wrong password", pgError("28P01"), "auth", undefined],
    ["3D000 no such database", pgError("3D000"), "auth", undefined],
    ["53100 disk full", pgError("53100"), "disk-full", undefined],
    ["ECONNRESET", pgError("ECONNRESET"), "unreachable", 5],
    [
      "a lost connection, wrapped",
      new Error("query failed", { cause: new Error("Connection terminated unexpectedly") }),
      "unreachable",
      5,
    ],
    ["a certificate that does not verify", pgError("SELF_SIGNED_CERT_IN_CHAIN"), "tls", undefined],
  ])("%s", (_, error, reason, retryAfterSeconds) => {
    const outage = storeOutage(error);
    expect(outage?.reason).toBe(reason);
    expect(outage?.retryAfterSeconds).toBe(retryAfterSeconds);
  });

  it.each([
    ["23505 unique violation", pgError("23505")],
    ["42P01 no such table", pgError("42P01")],
    ["22P02 bad input", pgError("22P02")],
    ["EPERM", pgError("EPERM")],
    ["a message that mentions SSL", pgError("", "value SSL is not a card number")],
  ])("%s is the statement's failure, not an outage", (_, error) => {
    expect(storeOutage(error)).toBeUndefined();
  });
});

describe.skipIf(STORE !== "sqlite")("a SQLite file locked beyond the busy timeout", () => {
  let server: TestServer;

  beforeAll(async () => {
    // better-sqlite3 waits out the busy timeout synchronously, holding the event loop: background passes every
    // 200 ms would each hold it 5 s more. They are kept out of the way, so the test measures the requests.
    server = await startTestServer({ TESSERA_SWEEP_INTERVAL_MS: "3600000", TESSERA_JOB_POLL_MS: "60000" });
  });

  afterAll(async () => {
    await server?.close();
  });

  it(
    "answers a write 503 store-unavailable with Retry-After: 1, and serves again once the lock is gone",
    { timeout: 60_000 },
    async () => {
      const app = await server.request("POST", "/applications", {
        body: {
          name: "reader",
          type: "private",
          rules: [
            { priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read"] },
          ],
        },
      });
      const token = await server.request("POST", "/tokens", { key: app.body.key, body: TOKEN });
      expect(token.status, token.text).toBe(201);
      const file = server.database.env.TESSERA_DATABASE_URL!.slice("sqlite:".length);
      const holder = new SQLite(file);
      try {
        // Another process holds the write lock for longer than the server's busy timeout (5 s).
        holder.exec("begin immediate");
        const refused = await server.request("POST", "/applications", {
          body: { name: "while locked", type: "management", permissions: ["tenant:read"] },
        });
        expectProblem(refused, 503, {
          code: "store-unavailable",
          detail: /^The vault's store is unavailable: the database is busy\. Retry after 1 s\.$/,
        });
        expect(refused.headers.get("retry-after")).toBe("1");
        // A read is answered only once its audit entry is written: that write meets the lock too.
        const read = await server.request("GET", `/tokens/${token.body.id}`, { key: app.body.key });
        expectProblem(read, 503, { code: "store-unavailable", detail: /the database is busy/ });
        expect(read.headers.get("retry-after")).toBe("1");
      } finally {
        holder.exec("rollback");
        holder.close();
      }
      expect((await server.request("POST", "/tenants", { body: { name: "after" } })).status).toBe(201);
      expect((await server.request("GET", `/tokens/${token.body.id}`, { key: app.body.key })).status).toBe(
        200,
      );
    },
  );
});
