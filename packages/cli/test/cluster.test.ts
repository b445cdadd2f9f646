import { randomBytes } from "node:crypto";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Store } from "../../server/src/storage/database.js";
import {
  STORE,
  STORE_UNAVAILABLE,
  createTestDatabase,
  send,
  type TestDatabase,
  type TestResponse,
} from "../../server/test/harness.js";
import { freePort } from "../../server/test/postgres-cluster.js";
import { descendants, errorLines, isAlive, stopServer, waitUntil } from "./processes.js";
import { killAll, tessera, waitFor, type Run } from "./run-cli.js";
import { withStore } from "./store.js";
import { startWebhookCounter, type WebhookCounter } from "./webhook-counter.js";

const INSTANCES = 3;
const INVOCATIONS = 300;
/** Runs at once per instance (TESSERA_ASYNC_CONCURRENCY); an instance delivers twice as many webhooks at once. */
const CONCURRENCY = 4;
const DELIVERY_CONCURRENCY = 2 * CONCURRENCY;
/** The instance that is killed, once this many webhooks have arrived: the queue is then about a third done. */
const VICTIM = 1;
const KILL_AFTER = 100;

/** Slow enough that each instance has runs under way when one is killed, fast enough to finish 300 quickly. */
const SLOW_ECHO = `module.exports = async ({ args }) => {
  await new Promise((resolve) => setTimeout(resolve, 150));
  return { raw: { n: args.n } };
};
`;

/**
 * Issue 7, item 1: several instances on one PostgreSQL. Three `tessera serve` processes start at the same moment
 * on an empty database (migrations, bootstrap and the reactor package copy race), then share 300 asynchronous
 * invocations while one of them is SIGKILLed. SQLite is one machine's store: this runs on PostgreSQL only.
 */
describe.skipIf(STORE !== "postgres" || STORE_UNAVAILABLE)(
  `three instances on one PostgreSQL (${STORE})`,
  { timeout: 180_000 },
  () => {
    let database: TestDatabase;
    let reactorDir: string;
    let receiver: WebhookCounter;
    const servers: Run[] = [];
    const urls: string[] = [];
    let env: Record<string, string>;
    let admin: string;

    beforeAll(async () => {
      database = await createTestDatabase();
      // One reactor directory for all three, as instances sharing a host share TESSERA_REACTOR_DIR.
      reactorDir = mkdtempSync(path.join(tmpdir(), "tessera-cluster-reactors-"));
      receiver = await startWebhookCounter(30);
      admin = `bootstrap-${randomBytes(16).toString("hex")}`;
      env = {
        ...database.env,
        TESSERA_MASTER_KEY: randomBytes(32).toString("base64"),
        TESSERA_BOOTSTRAP_KEY: admin,
        TESSERA_REACTOR_DIR: reactorDir,
        TESSERA_WEBHOOK_ALLOW_PRIVATE: "true",
        TESSERA_JOB_POLL_MS: "100",
        TESSERA_ASYNC_CONCURRENCY: String(CONCURRENCY),
        // A delivery's lease is this plus 10 s: the killed instance's deliveries come back after ~12 s.
        TESSERA_WEBHOOK_TIMEOUT_MS: "2000",
        TESSERA_WEBHOOK_RETRY_BASE_MS: "100",
        // Every instance sweeps five times a second, so sweeps overlap.
        TESSERA_SWEEP_INTERVAL_MS: "200",
        // One client sends everything here: per-key and per-address rate limits would refuse most of it.
        TESSERA_RATE_LIMIT_KEY_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_ADDRESS_PER_SECOND: "0",
        TESSERA_MAX_EVENT_LOOP_DELAY_MS: "0",
      };
    });

    afterAll(async () => {
      killAll();
      await receiver?.close();
      await database?.drop();
      if (reactorDir !== undefined) rmSync(reactorDir, { recursive: true, force: true });
    });

    const request = (i: number, key: string, method: string, route: string, body?: unknown) =>
      send(urls[i]!, key, method, route, body === undefined ? {} : { body });

    function expectStatus(response: TestResponse, status: number): void {
      expect(response.status, response.text).toBe(status);
    }

    const inStore = <T>(fn: (store: Store) => Promise<T>) => withStore(env, fn);

    it("start together on an empty database: one migration run, one bootstrap tenant, one package copy", async () => {
      const ports = await Promise.all(Array.from({ length: INSTANCES }, () => freePort()));
      for (const port of ports) {
        urls.push(`http://127.0.0.1:${port}`);
        servers.push(tessera(["serve"], { ...env, TESSERA_PORT: String(port) }, database.dataDir));
      }
      await Promise.all(servers.map((server) => waitFor(server, /listening on/, 90_000)));

      const created = servers.filter((s) => s.stderr.includes("Tessera created the bootstrap tenant"));
      expect(created).toHaveLength(1);
      for (const server of servers) expect(errorLines(server.stderr)).toEqual([]);
      const state = await inStore(async ({ db }) => ({
        tenants: await db.selectFrom("tenants").select("id").execute(),
        migrations: (await sql<{ name: string }>`select name from kysely_migration`.execute(db)).rows,
        applications: await db.selectFrom("applications").select("id").execute(),
      }));
      expect(state.tenants).toHaveLength(1);
      expect(state.applications).toHaveLength(1);
      const names = state.migrations.map((row) => row.name);
      expect(new Set(names).size).toBe(names.length);
      expect(names.length).toBeGreaterThanOrEqual(7);
      for (const url of urls) expectStatus(await send(url, admin, "GET", "/tenants/self"), 200);
    });

    it(
      `share ${INVOCATIONS} asynchronous invocations, one instance SIGKILLed midway: every webhook arrives, ` +
        "repeats only from the deliveries the killed instance had under way",
      async () => {
        expect(servers).toHaveLength(INSTANCES);
        const application = await request(0, admin, "POST", "/applications", {
          name: "caller",
          type: "private",
          rules: [
            {
              priority: 1,
              container: "/",
              transform: "reveal",
              permissions: ["token:create", "token:read", "token:use"],
            },
          ],
        });
        expectStatus(application, 201);
        const caller = application.body.key as string;
        const reactor = await request(1, admin, "POST", "/reactors", {
          name: "slow echo",
          code: SLOW_ECHO,
          configuration: {},
        });
        expectStatus(reactor, 201);
        const react = `/reactors/${reactor.body.id as string}/react`;

        // A synchronous call on each instance starts the three worker pools together: each copies the npm
        // package cache into the shared directory at the same moment.
        const warm = await Promise.all(
          urls.map((_, i) => request(i, caller, "POST", react, { args: { n: 1000 + i } })),
        );
        warm.forEach((response, i) => {
          expectStatus(response, 200);
          expect(response.body).toEqual({ raw: { n: 1000 + i } });
        });
        const copies = readdirSync(reactorDir).filter((name) => name.includes("deno-"));
        expect(copies).toHaveLength(1);
        expect(copies[0]).toMatch(/^deno-[0-9a-f]{16}$/);

        // Tokens that expire during the test: the sweepers of all three instances race to delete them.
        const expiresAt = new Date(Date.now() + 5_000).toISOString();
        for (let i = 0; i < 30; i++) {
          const token = await request(i % INSTANCES, caller, "POST", "/tokens", {
            data: `expiring-${i}`,
            expires_at: expiresAt,
          });
          expectStatus(token, 201);
        }

        // Spread over the three, 12 requests at a time.
        const accepted = new Map<string, number>();
        let next = 0;
        await Promise.all(
          Array.from({ length: 12 }, async () => {
            while (next < INVOCATIONS) {
              const n = next++;
              const response = await request(n % INSTANCES, caller, "POST", react, {
                args: { n },
                callback_url: `${receiver.url}/hook`,
              });
              expectStatus(response, 202);
              expect(response.body).toEqual({ id: expect.any(String), status: "pending" });
              accepted.set(response.body.id as string, n);
            }
          }),
        );
        expect(accepted.size).toBe(INVOCATIONS);

        await waitUntil(
          () => receiver.arrivals.length >= KILL_AFTER,
          60_000,
          () => `${KILL_AFTER} webhooks (${receiver.arrivals.length} arrived)`,
        );
        const victim = servers[VICTIM]!;
        const workers = descendants(victim.child.pid!);
        expect(workers.length).toBeGreaterThan(0);
        const killedAt = Date.now();
        const arrivedBeforeKill = receiver.arrivals.length;
        victim.child.kill("SIGKILL");
        await victim.exited;
        // Its Deno workers die with it (setpriv --pdeathsig KILL), not orphaned.
        await waitUntil(
          () => workers.every((pid) => !isAlive(pid)),
          10_000,
          () => `the killed instance's workers to exit (${workers.filter(isAlive).join(", ")} alive)`,
        );

        // Runs the victim had under way come back after their lease (timeout_ms 10 s + 15 s).
        await waitUntil(
          () => receiver.distinct() >= INVOCATIONS,
          75_000,
          () => `every webhook (${receiver.distinct()} of ${INVOCATIONS} distinct arrived)`,
        );

        const byId = new Map<string, number>();
        for (const arrival of receiver.arrivals) byId.set(arrival.id, (byId.get(arrival.id) ?? 0) + 1);
        expect([...byId.keys()].sort()).toEqual([...accepted.keys()].map((id) => `msg_${id}`).sort());
        for (const arrival of receiver.arrivals) {
          const id = arrival.id.slice("msg_".length);
          expect(arrival.body).toMatchObject({
            type: "reactor.invocation.completed",
            data: { id, status: "completed", result: { raw: { n: accepted.get(id) } } },
          });
        }
        const repeated = [...byId].filter(([, count]) => count > 1);
        const repeats = receiver.arrivals.length - byId.size;
        // A repeat is a delivery the victim had sent but not yet recorded: its first copy arrived before the kill.
        for (const [id] of repeated) {
          const first = receiver.arrivals.find((arrival) => arrival.id === id)!;
          expect(first.at).toBeLessThan(killedAt + 1_000);
        }
        expect(repeats).toBeLessThanOrEqual(DELIVERY_CONCURRENCY);

        const readRows = () =>
          inStore(({ db }) =>
            db
              .selectFrom("reactor_invocations")
              .select(["id", "status", "delivery_status", "run_attempts", "delivery_attempts"])
              .execute(),
          );
        // An instance records a delivery once the receiver has answered it: the last arrivals' rows may still be
        // on their way to "delivered" when the receiver has them all.
        let rows = await readRows();
        await waitUntil(
          async () => (rows = await readRows()).every((row) => row.delivery_status === "delivered"),
          30_000,
          () =>
            `every delivery recorded (${rows.filter((row) => row.delivery_status !== "delivered").length} not)`,
        );
        expect(rows).toHaveLength(INVOCATIONS);
        for (const row of rows) {
          expect(row).toMatchObject({ status: "completed", delivery_status: "delivered" });
        }
        const rerun = rows.filter((row) => Number(row.run_attempts) > 1);
        const redelivered = rows.filter((row) => Number(row.delivery_attempts) > 1);
        // Only what the victim held can have needed a second attempt: at most its concurrency of each.
        expect(rerun.length).toBeLessThanOrEqual(CONCURRENCY);
        expect(redelivered.length).toBeLessThanOrEqual(DELIVERY_CONCURRENCY);
        console.info(
          `cluster: ${receiver.arrivals.length} webhooks for ${byId.size} invocations, ${repeats} repeated; ` +
            `killed after ${arrivedBeforeKill} arrivals with ${workers.length} workers; ${rerun.length} runs ` +
            `taken over, ${redelivered.length} deliveries sent again; all delivered ` +
            `${((Date.now() - killedAt) / 1000).toFixed(1)} s after the kill`,
        );

        // The sweepers of the survivors removed the expired tokens, without errors from sweeping together.
        await waitUntil(
          async () =>
            (
              await inStore(({ db }) =>
                db.selectFrom("tokens").select("id").where("expires_at", "<=", expiresAt).execute(),
              )
            ).length === 0,
          10_000,
          () => "the expired tokens to be swept",
        );
        for (const [i, server] of servers.entries()) {
          if (i !== VICTIM) expect(errorLines(server.stderr)).toEqual([]);
        }
        for (const [i, server] of servers.entries()) {
          if (i !== VICTIM) expect(await stopServer(server)).toBe(0);
        }
      },
    );
  },
);
