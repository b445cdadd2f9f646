import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  TEST_MASTER_KEY,
  expectProblem,
  startTestServer,
  type TestServer,
} from "../../../test/harness.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../../test/webhook-receiver.js";
import { createKeyring } from "../../crypto/keyring.js";
import type { Store } from "../../storage/database.js";
import { createTenantKeys } from "../../keys/tenant-keys.js";
import { sealJson } from "./sealing.js";
import { invocationStore } from "./store.js";

const HELD = 1_000;
const ECHO = "module.exports = async ({ args }) => ({ raw: { args } });";
/** The delivery attempt timeout of these servers. */
const TIMEOUT_MS = 2_000;
/** TESSERA_ASYNC_MAX_QUEUED_PER_TENANT of these servers. */
const MAX_QUEUED = 5;

/** A receiver that accepts every webhook and never answers: it counts what it holds at once. */
async function startHangingReceiver() {
  const held = new Set<ServerResponse>();
  let total = 0;
  let most = 0;
  const server = createServer((_request: IncomingMessage, response: ServerResponse) => {
    total += 1;
    held.add(response);
    most = Math.max(most, held.size);
    response.on("close", () => held.delete(response));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats: () => ({ total, most, open: held.size }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * docs/reactors.md#fairness, end to end: the production deliverer of every instance claims 1,000 webhooks that a
 * receiver never answers, and another tenant's webhook still goes at once; the dead destination never has more
 * than its share of attempts in flight, and is paused once it stops answering. On PostgreSQL two instances share
 * the store, as in production.
 */
describe.skipIf(STORE_UNAVAILABLE)("fair webhook delivery and the per-tenant queue bound", () => {
  const env = {
    TESSERA_WEBHOOK_ALLOW_PRIVATE: "true",
    TESSERA_JOB_POLL_MS: "50",
    TESSERA_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    TESSERA_WEBHOOK_RETRY_BASE_MS: "60000",
    TESSERA_ASYNC_MAX_QUEUED_PER_TENANT: String(MAX_QUEUED),
  };
  let servers: TestServer[] = [];
  let hanging: Awaited<ReturnType<typeof startHangingReceiver>>;
  let receiver: WebhookReceiver;
  let store: Store;

  const first = () => servers[0]!;

  async function created(key: string, path: string, body: unknown): Promise<any> {
    const response = await first().request("POST", path, { key, body });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  /** A tenant's Application allowed to invoke, and a reactor to invoke. */
  async function invoker(managementKey: string): Promise<{ key: string; reactorId: string }> {
    const application = await created(managementKey, "/applications", {
      name: "invoker",
      type: "private",
      permissions: ["token:use"],
    });
    const reactor = await created(managementKey, "/reactors", {
      name: "echo",
      code: ECHO,
      configuration: {},
    });
    return { key: application.key, reactorId: reactor.id };
  }

  const react = (who: { key: string; reactorId: string }, callbackUrl: string) =>
    first().request("POST", `/reactors/${who.reactorId}/react`, {
      key: who.key,
      body: { args: { at: Date.now() }, callback_url: callbackUrl },
    });

  /** 1,000 finished invocations of the tenant whose webhooks go to the receiver that never answers. */
  async function holdDeliveries(tenantId: string): Promise<void> {
    const clock = first().clock;
    const keys = createTenantKeys({
      store,
      keyring: createKeyring(Buffer.from(TEST_MASTER_KEY, "base64")),
      clock,
    });
    const key = await keys.current(tenantId, "data");
    const past = new Date(clock.now().getTime() - 1_000).toISOString();
    // Queued in the future, so that no runner claims them before they are marked finished below.
    const future = new Date(clock.now().getTime() + 86_400_000).toISOString();
    await store.transaction(async (trx) => {
      const queue = invocationStore({ db: trx, dialect: store.dialect, transaction: (fn) => fn(trx) });
      for (let i = 0; i < HELD; i++) {
        const id = randomUUID();
        await queue.insert({
          id,
          tenantId,
          reactorId: randomUUID(),
          requestedBy: randomUUID(),
          callbackUrl: `${hanging.url}/held/${i}`,
          timeoutMs: 10_000,
          args: sealJson(key, tenantId, id, "args", {}),
          keyVersion: key.version,
          createdAt: future,
        });
        await trx
          .updateTable("reactor_invocations")
          .set({
            status: "completed",
            args: null,
            outcome: sealJson(key, tenantId, id, "outcome", { status: "completed", result: { raw: i } }),
            key_version: key.version,
            created_at: past,
            started_at: past,
            finished_at: past,
            delivery_status: "pending",
            deliver_after: past,
          })
          .where("id", "=", id)
          .execute();
      }
    });
  }

  beforeAll(async () => {
    hanging = await startHangingReceiver();
    receiver = await startWebhookReceiver();
    servers = [await startTestServer(env)];
    if (STORE === "postgres") servers.push(await startTestServer(env, { sharing: servers[0] }));
    store = first().database.open();
  }, 120_000);
  afterAll(async () => {
    await store?.close();
    // The instance sharing the store first: the first one drops the store when it closes.
    for (const server of [...servers].reverse()) await server.close();
    await hanging?.close();
    await receiver?.close();
  });

  it(`delivers another tenant's webhook at once while a receiver that never answers holds ${HELD}`, async () => {
    const tenantId = (await first().request("GET", "/applications/key")).body.tenant_id as string;
    const holder = await invoker(first().bootstrapKey);
    await holdDeliveries(tenantId);
    // The instances are at the held webhooks: their receiver holds attempts open.
    const deadline = Date.now() + 15_000;
    while (hanging.stats().open === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(hanging.stats().open).toBeGreaterThan(0);

    const other = await first().request("POST", "/tenants", { body: { name: "unrelated" } });
    expect(other.status, other.text).toBe(201);
    const unrelated = await invoker(other.body.application.key);
    const started = Date.now();
    const before = receiver.received.length;
    const accepted = await react(unrelated, `${receiver.url}/on-time`);
    expect(accepted.status, accepted.text).toBe(202);
    // Without fairness it waited for every held webhook's attempt: 1,000 × 2 s shared by 8 slots per instance.
    const [hook] = (await receiver.waitFor(before + 1, 20_000)).slice(before);
    expect(hook!.body.data.id).toBe(accepted.body.id);
    expect(Date.now() - started).toBeLessThan(20_000);

    // The held destination never had more than its share in flight, over every instance, and is paused once
    // its attempts ran out of time: no more attempts start while the pause lasts.
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS + 1_000));
    const stats = hanging.stats();
    expect(stats.most).toBeLessThanOrEqual(2);
    expect(stats.total).toBeGreaterThan(0);
    expect(stats.open).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(hanging.stats().total).toBe(stats.total);
    const attempted = await store.db
      .selectFrom("webhook_delivery_attempts")
      .select(["error", "response_status"])
      .execute();
    expect(attempted.length).toBe(stats.total + 1);
    expect(attempted.filter((a) => a.error === "the receiver did not answer in time")).toHaveLength(
      stats.total,
    );

    // The tenant holding 1,000 unsettled invocations is at its bound: 429 with Retry-After, nothing stored.
    const count = async () =>
      Number(
        (
          await store.db
            .selectFrom("reactor_invocations")
            .select((eb) => eb.fn.countAll().as("n"))
            .where("tenant_id", "=", tenantId)
            .executeTakeFirstOrThrow()
        ).n,
      );
    const rows = await count();
    const refused = await react(holder, `${receiver.url}/refused`);
    expectProblem(refused, 429, { code: "rate-limited" });
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(await count()).toBe(rows);
  }, 120_000);

  it(`bounds each tenant's unsettled invocations at TESSERA_ASYNC_MAX_QUEUED_PER_TENANT on its own`, async () => {
    const other = await first().request("POST", "/tenants", { body: { name: "bounded" } });
    const tenant = await invoker(other.body.application.key);
    // Webhooks to the paused destination stay pending: each invocation stays unsettled.
    for (let i = 0; i < MAX_QUEUED; i++) {
      const accepted = await react(tenant, `${hanging.url}/bounded/${i}`);
      expect(accepted.status, accepted.text).toBe(202);
    }
    const refused = await react(tenant, `${receiver.url}/bounded`);
    expectProblem(refused, 429, { code: "rate-limited" });
    expect(refused.headers.get("retry-after")).toBe("30");
    expect(refused.body.detail).toMatch(/has 5 asynchronous invocations queued/);
    // Other tenants are not held by this one's bound.
    const third = await first().request("POST", "/tenants", { body: { name: "free" } });
    const free = await invoker(third.body.application.key);
    expect((await react(free, `${receiver.url}/free`)).status).toBe(202);
  }, 60_000);
});
