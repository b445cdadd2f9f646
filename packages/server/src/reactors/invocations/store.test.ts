import { randomUUID } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  STORE_UNAVAILABLE,
  TEST_MASTER_KEY,
  createTestDatabase,
  type TestDatabase,
} from "../../../test/harness.js";
import { createKeyring } from "../../crypto/keyring.js";
import { type Store } from "../../storage/database.js";
import { migrateToLatest } from "../../storage/migrate.js";
import { createTenantService } from "../../tenants/service.js";
import { invocationStore, type Claim, type InvocationStore } from "./store.js";
import type { InvocationRecord } from "./types.js";

const T0 = Date.parse("2026-01-01T00:00:00.000Z");
const at = (ms: number) => new Date(T0 + ms).toISOString();

/** A claim at `ms`, leasing each row for its timeout. */
const claimAt = (owner: string, ms: number): Claim => ({
  owner,
  now: at(ms),
  leaseUntil: (record) => at(ms + record.timeoutMs),
});

/**
 * The queue's guarantees on a real store: a due row goes to one claimant; a lease that runs out hands the row to
 * another instance, and the first can then no longer write it.
 */
describe.skipIf(STORE_UNAVAILABLE)("the invocation queue", () => {
  let database: TestDatabase;
  let store: Store;
  let invocations: InvocationStore;
  let tenantId: string;

  async function enqueue(createdMs: number, timeoutMs = 10_000): Promise<string> {
    const id = randomUUID();
    await invocations.insert({
      id,
      tenantId,
      reactorId: randomUUID(),
      requestedBy: randomUUID(),
      callbackUrl: "https://hooks.example.com/",
      timeoutMs,
      args: "sealed",
      keyVersion: 1,
      createdAt: at(createdMs),
    });
    return id;
  }

  async function drain(owner: string, ms: number): Promise<void> {
    for (;;) {
      const claimed = await invocations.claimRun(claimAt(owner, ms));
      if (claimed === undefined) return;
      await invocations.finishRun(claimed, owner, {
        status: "completed",
        outcome: "sealed",
        keyVersion: 1,
        finishedAt: at(ms),
      });
    }
  }

  // A store of its own for each test: what one test leaves queued would be due in the next.
  beforeEach(async () => {
    database = await createTestDatabase();
    store = database.open();
    await migrateToLatest(store);
    const tenants = createTenantService({
      store,
      keyring: createKeyring(Buffer.from(TEST_MASTER_KEY, "base64")),
      clock: { now: () => new Date(T0) },
    });
    tenantId = (await tenants.bootstrap({}))!.tenant.id;
    invocations = invocationStore(store);
  });
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });

  it("hands a due run to one claimant, in the order runs became due, and nothing not yet due", async () => {
    // Leased past 60 s, so that the claim at 60 s finds only the run that became due then.
    const first = await enqueue(0, 100_000);
    const second = await enqueue(1, 100_000);
    const future = await enqueue(60_000);
    const a = await invocations.claimRun(claimAt("a", 5_000));
    const b = await invocations.claimRun(claimAt("b", 5_000));
    expect([a?.id, b?.id]).toEqual([first, second]);
    expect(a).toMatchObject({ status: "running", runAttempts: 1, startedAt: at(5_000) });
    expect(await invocations.claimRun(claimAt("c", 5_000))).toBeUndefined();
    expect((await invocations.claimRun(claimAt("c", 60_000)))?.id).toBe(future);
  });

  it("gives concurrent claimants different rows", async () => {
    const ids = await Promise.all(Array.from({ length: 12 }, (_, i) => enqueue(i)));
    const claims = await Promise.all(
      Array.from({ length: 16 }, (_, i) => invocations.claimRun(claimAt(`owner-${i}`, 1_000))),
    );
    const claimed = claims.filter((c): c is InvocationRecord => c !== undefined).map((c) => c.id);
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.sort()).toEqual([...ids].sort());
  });

  it("hands a run whose lease ran out to another instance, and fences the first out", async () => {
    const id = await enqueue(0, 10_000);
    const first = await invocations.claimRun(claimAt("dies", 0));
    expect(first?.id).toBe(id);
    expect(await invocations.claimRun(claimAt("other", 9_999))).toBeUndefined();
    const second = await invocations.claimRun(claimAt("other", 10_000));
    expect(second).toMatchObject({ id, runAttempts: 2 });

    const finished = {
      status: "completed" as const,
      outcome: "sealed",
      keyVersion: 1,
      finishedAt: at(11_000),
    };
    expect(await invocations.finishRun(first!, "dies", finished)).toBe(false);
    expect(await invocations.finishRun(second!, "other", finished)).toBe(true);
    expect(await invocations.finishRun(second!, "other", finished)).toBe(false);
    const row = (await invocations.findById(tenantId, id))?.record;
    expect(row).toMatchObject({
      status: "completed",
      args: null,
      deliveryStatus: "pending",
      deliverAfter: at(11_000),
    });
  });

  it("leases deliveries the same way, and records each attempt only for the lease holder", async () => {
    const id = await enqueue(0);
    await drain("runner", 1_000);
    const lease = (owner: string, ms: number): Claim => ({
      owner,
      now: at(ms),
      leaseUntil: () => at(ms + 20_000),
    });
    const first = await invocations.claimDelivery(lease("dies", 1_000));
    expect(first).toMatchObject({ id, deliveryAttempts: 1 });
    expect(await invocations.claimDelivery(lease("other", 20_999))).toBeUndefined();
    const second = await invocations.claimDelivery(lease("other", 21_000));
    expect(second).toMatchObject({ id, deliveryAttempts: 2 });

    const attempt = (n: number) => ({
      attempt: { attempt: n, attemptedAt: at(21_000), durationMs: 3, responseStatus: 200, error: null },
      next: { status: "delivered" as const },
    });
    expect(await invocations.recordDelivery(first!, "dies", attempt(1))).toBe(false);
    expect(await invocations.recordDelivery(second!, "other", attempt(2))).toBe(true);
    expect(await invocations.findById(tenantId, id)).toMatchObject({
      record: { deliveryStatus: "delivered", deliveredAt: at(21_000), deliverAfter: null },
      attempts: [attempt(2).attempt],
    });
  });

  it("gives a released run back without counting it", async () => {
    const id = await enqueue(0);
    const claimed = await invocations.claimRun(claimAt("busy", 0));
    await invocations.releaseRun(claimed!, "busy", at(1_000));
    expect((await invocations.findById(tenantId, id))?.record).toMatchObject({
      status: "pending",
      runAttempts: 0,
      runAfter: at(1_000),
    });
    expect(await invocations.claimRun(claimAt("x", 999))).toBeUndefined();
    expect((await invocations.claimRun(claimAt("x", 1_000)))?.id).toBe(id);
  });

  it("deletes an invocation after its retention only once its webhook is settled", async () => {
    const settled = await enqueue(20 * 86_400_000);
    const undelivered = await enqueue(20 * 86_400_000);
    await drain("runner", 20 * 86_400_000);
    const claim = await invocations.claimDelivery({
      owner: "d",
      now: at(20 * 86_400_000),
      leaseUntil: () => at(20 * 86_400_000 + 20_000),
    });
    expect(claim?.id).toBe(settled);
    await invocations.recordDelivery(claim!, "d", {
      attempt: {
        attempt: 1,
        attemptedAt: at(20 * 86_400_000),
        durationMs: 1,
        responseStatus: 410,
        error: null,
      },
      next: { status: "failed" },
    });
    expect(await invocations.deleteSettledBefore(at(20 * 86_400_000))).toBe(0);
    expect(await invocations.deleteSettledBefore(at(20 * 86_400_000 + 1))).toBe(1);
    expect(await invocations.findById(tenantId, settled)).toBeUndefined();
    expect(await invocations.findById(tenantId, undelivered)).toBeDefined();
  });
});
