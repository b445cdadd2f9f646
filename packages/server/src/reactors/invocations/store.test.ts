import { randomUUID } from "node:crypto";
import type { KyselyPlugin } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  TEST_MASTER_KEY,
  createTestDatabase,
  type TestDatabase,
} from "../../../test/harness.js";
import { createKeyring } from "../../crypto/keyring.js";
import { type Store } from "../../storage/database.js";
import { migrateToLatest } from "../../storage/migrate.js";
import { createTenantService } from "../../tenants/service.js";
import { createTenantKeys } from "../../keys/tenant-keys.js";
import { invocationStore, type Claim, type DeliveryClaim, type InvocationStore } from "./store.js";
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

  async function enqueue(
    createdMs: number,
    timeoutMs = 10_000,
    { tenant = tenantId, callbackUrl = "https://hooks.example.com/" } = {},
  ): Promise<string> {
    const id = randomUUID();
    expect(await invocations.insert(newInvocation(id, createdMs, timeoutMs, tenant, callbackUrl))).toBe(true);
    return id;
  }

  function newInvocation(
    id: string,
    createdMs: number,
    timeoutMs: number,
    tenant: string,
    callbackUrl: string,
  ) {
    return {
      id,
      tenantId: tenant,
      reactorId: randomUUID(),
      requestedBy: randomUUID(),
      callbackUrl,
      timeoutMs,
      args: "sealed",
      keyVersion: 1,
      createdAt: at(createdMs),
    };
  }

  /** A second tenant, as a row: the queue needs nothing else of it. */
  async function otherTenant(): Promise<string> {
    const id = randomUUID();
    await store.db
      .insertInto("tenants")
      .values({ id, name: "other", created_by: null, created_at: at(0) })
      .execute();
    return id;
  }

  const deliveryClaim = (owner: string, ms: number, perDestination = 2): DeliveryClaim => ({
    owner,
    now: at(ms),
    leaseUntil: () => at(ms + 60_000),
    perDestination,
  });

  const answered = (claimed: InvocationRecord, ms: number, up: boolean, pauseMs = 1_000) =>
    invocations.recordDelivery(claimed, ownerOf.get(claimed.id)!, {
      attempt: {
        attempt: claimed.deliveryAttempts,
        attemptedAt: at(ms),
        durationMs: 1,
        responseStatus: up ? 200 : 503,
        error: null,
      },
      next: up ? { status: "delivered" } : { status: "pending", after: at(ms) },
      destination: up ? { up: true } : { up: false, pausedUntil: (failures) => at(ms + failures * pauseMs) },
    });

  /** Who claimed each delivery, for `answered`. */
  const ownerOf = new Map<string, string>();
  async function claimDelivery(owner: string, ms: number, perDestination = 2, from = invocations) {
    const claimed = await from.claimDelivery(deliveryClaim(owner, ms, perDestination));
    if (claimed !== undefined) ownerOf.set(claimed.id, owner);
    return claimed;
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
      keys: createTenantKeys({
        store,
        keyring: createKeyring(Buffer.from(TEST_MASTER_KEY, "base64")),
        clock: { now: () => new Date(T0) },
      }),
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
    const lease = (owner: string, ms: number): DeliveryClaim => ({
      owner,
      now: at(ms),
      leaseUntil: () => at(ms + 20_000),
      perDestination: 2,
    });
    const first = await invocations.claimDelivery(lease("dies", 1_000));
    expect(first).toMatchObject({ id, deliveryAttempts: 1 });
    expect(await invocations.claimDelivery(lease("other", 20_999))).toBeUndefined();
    const second = await invocations.claimDelivery(lease("other", 21_000));
    expect(second).toMatchObject({ id, deliveryAttempts: 2 });

    const attempt = (n: number) => ({
      attempt: { attempt: n, attemptedAt: at(21_000), durationMs: 3, responseStatus: 200, error: null },
      next: { status: "delivered" as const },
      destination: { up: true as const },
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

  it("keeps at most perDestination deliveries in flight to one destination, across concurrent instances", async () => {
    for (let i = 0; i < 20; i++) await enqueue(i, 10_000, { callbackUrl: `https://dead.example/${i}` });
    for (let i = 0; i < 5; i++)
      await enqueue(100 + i, 10_000, { callbackUrl: "https://alive.example:443/x" });
    await drain("runner", 1_000);
    // Four instances, each with its own connections, claiming at once. On SQLite the instances of this process
    // share one writer, which serialises claims; instances in several processes on one SQLite file are not a
    // supported deployment (PostgreSQL is the store for several instances).
    const instances =
      STORE === "postgres" ? [store, database.open(), database.open(), database.open()] : [store];
    try {
      const queues = instances.map((each) => invocationStore(each));
      const claims = await Promise.all(
        Array.from({ length: 24 }, (_, i) =>
          claimDelivery(`owner-${i}`, 2_000, 3, queues[i % queues.length]),
        ),
      );
      // A claim that finds a destination held by another claim passes it over rather than wait, so some of
      // the concurrent ones may come back empty: the rest is claimed now, one at a time.
      for (let next = await claimDelivery("late-0", 2_000, 3); next !== undefined;) {
        claims.push(next);
        next = await claimDelivery(`late-${claims.length}`, 2_000, 3);
      }
      const claimed = claims.filter((c): c is InvocationRecord => c !== undefined);
      expect(new Set(claimed.map((c) => c.id)).size).toBe(claimed.length);
      const perDestination = countBy(claimed.map((c) => c.destination));
      expect(perDestination).toEqual({ "https://dead.example:443": 3, "https://alive.example:443": 3 });

      // A slot frees when an attempt is recorded, and the next delivery to that destination can go.
      const [first] = claimed.filter((c) => c.destination === "https://alive.example:443");
      expect(await answered(first!, 3_000, true)).toBe(true);
      const next = await claimDelivery("next", 3_000, 3);
      expect(next?.destination).toBe("https://alive.example:443");
      expect(await claimDelivery("none", 3_000, 3)).toBeUndefined();
    } finally {
      await Promise.all(instances.slice(1).map((each) => each.close()));
    }
  });

  it("pauses a destination that does not answer, longer each time, and resumes it when it answers", async () => {
    for (const i of [0, 1, 2]) await enqueue(i, 10_000, { callbackUrl: "http://down.example:8080/hook" });
    const alive = await enqueue(10, 10_000, { callbackUrl: "http://up.example:8080/hook" });
    await drain("runner", 1_000);

    const first = await claimDelivery("a", 2_000, 1);
    expect(first?.destination).toBe("http://down.example:8080");
    expect(await answered(first!, 2_000, false)).toBe(true);
    // Paused for 1 s (one failure): only the other destination's delivery goes.
    expect((await claimDelivery("b", 2_000, 1))?.id).toBe(alive);
    expect(await claimDelivery("c", 2_999, 1)).toBeUndefined();
    const second = await claimDelivery("d", 3_000, 1);
    expect(second?.destination).toBe("http://down.example:8080");
    expect(await answered(second!, 3_000, false)).toBe(true);
    // Two failures in a row: 2 s.
    expect(await claimDelivery("e", 4_999, 1)).toBeUndefined();
    const third = await claimDelivery("f", 5_000, 1);
    expect(third?.destination).toBe("http://down.example:8080");
    expect(await answered(third!, 5_000, true)).toBe(true);
    // It answered: no pause; the next of its deliveries goes at once.
    expect((await claimDelivery("g", 5_000, 1))?.destination).toBe("http://down.example:8080");
  });

  it("serves the tenant with the fewest deliveries in flight first, however old the others' are", async () => {
    const busy = tenantId;
    const quiet = await otherTenant();
    for (let i = 0; i < 4; i++)
      await enqueue(i, 10_000, { tenant: busy, callbackUrl: `https://h${i}.example/` });
    const late = await enqueue(50, 10_000, { tenant: quiet, callbackUrl: "https://q.example/" });
    await drain("runner", 1_000);
    expect((await claimDelivery("1", 2_000))?.tenantId).toBe(busy);
    // The busy tenant has one in flight, the quiet one none: the quiet one's newer delivery goes next.
    expect((await claimDelivery("2", 2_000))?.id).toBe(late);
    expect((await claimDelivery("3", 2_000))?.tenantId).toBe(busy);
  });

  it("runs the tenant with the fewest runs under way first", async () => {
    const busy = tenantId;
    const quiet = await otherTenant();
    await enqueue(0, 10_000, { tenant: busy });
    await enqueue(1, 10_000, { tenant: busy });
    const late = await enqueue(50, 10_000, { tenant: quiet });
    expect((await invocations.claimRun(claimAt("1", 1_000)))?.tenantId).toBe(busy);
    expect((await invocations.claimRun(claimAt("2", 1_000)))?.id).toBe(late);
    expect((await invocations.claimRun(claimAt("3", 1_000)))?.tenantId).toBe(busy);
  });

  it("bounds a tenant's unsettled invocations: queued, running, or awaiting their webhook", async () => {
    const other = await otherTenant();
    const bounded = (id: string, tenant = tenantId) =>
      invocations.insert(newInvocation(id, 0, 10_000, tenant, "https://hooks.example.com/"), 2);
    expect(await bounded(randomUUID())).toBe(true);
    expect(await bounded(randomUUID())).toBe(true);
    expect(await bounded(randomUUID())).toBe(false);
    // Another tenant has a bound of its own.
    expect(await bounded(randomUUID(), other)).toBe(true);
    // Run, they still count until their webhook settles.
    await drain("runner", 1_000);
    expect(await bounded(randomUUID())).toBe(false);
    const claimed = [await claimDelivery("d", 2_000, 3), await claimDelivery("e", 2_000, 3)];
    const delivered = claimed.find((c) => c?.tenantId === tenantId);
    expect(await answered(delivered!, 2_000, true)).toBe(true);
    expect(await bounded(randomUUID())).toBe(true);
    expect(await bounded(randomUUID())).toBe(false);
    expect((await invocations.backlog()).runs).toBe(1);
  });

  it("counts a run that finishes while the bound is checked once, not twice", async () => {
    await enqueue(0);
    const running = await invocations.claimRun(claimAt("runner", 1_000));
    expect(running?.status).toBe("running");
    // After the count's first statement answers, the run finishes on another connection: it is no longer running
    // and now awaits its webhook. Counted by two statements, it was seen in both states.
    const elsewhere = database.open();
    let finished = false;
    const finishAfterFirstStatement: KyselyPlugin = {
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        if (!finished) {
          finished = true;
          await invocationStore(elsewhere).finishRun(running!, "runner", {
            status: "completed",
            outcome: "sealed",
            keyVersion: 1,
            finishedAt: at(1_000),
          });
        }
        return args.result;
      },
    };
    const observed = invocationStore({ ...store, db: store.db.withPlugin(finishAfterFirstStatement) });
    try {
      expect(await observed.unsettled(tenantId)).toBe(1);
    } finally {
      await elsewhere.close();
    }
    expect(finished).toBe(true);
    expect((await invocations.findById(tenantId, running!.id))?.record.deliveryStatus).toBe("pending");
  });

  it("gives up deliveries whose window closed undelivered, and forgets idle destinations", async () => {
    const stuck = await enqueue(0, 10_000, { callbackUrl: "https://down.example/" });
    const fresh = await enqueue(5_000, 10_000, { callbackUrl: "https://down.example/" });
    await drain("runner", 1_000);
    const claimed = await claimDelivery("a", 1_000);
    expect(claimed?.id).toBe(stuck);
    // In flight: not given up while its lease holds.
    expect(await invocations.failUndeliveredBefore(at(1_001), at(1_000))).toBe(0);
    expect(await answered(claimed!, 1_000, false, 3_600_000)).toBe(true);
    await drain("runner", 6_000);
    expect(await invocations.failUndeliveredBefore(at(1_001), at(2_000))).toBe(1);
    expect((await invocations.findById(tenantId, stuck))?.record.deliveryStatus).toBe("failed");
    expect((await invocations.findById(tenantId, fresh))?.record.deliveryStatus).toBe("pending");

    // The destination is paused for an hour: kept until then, forgotten once idle and unpaused.
    expect(await invocations.deleteIdleDestinationsBefore(at(2_000), at(2_000))).toBe(0);
    expect(await invocations.deleteIdleDestinationsBefore(at(2_000), at(3_601_000))).toBe(1);
  });

  it("claims a delivery written without a destination (by a version before 0011, during an upgrade)", async () => {
    const id = await enqueue(0);
    await drain("runner", 1_000);
    await store.db
      .updateTable("reactor_invocations")
      .set({ destination: null })
      .where("id", "=", id)
      .execute();
    const claimed = await claimDelivery("upgraded", 2_000);
    expect(claimed).toMatchObject({ id, destination: "https://hooks.example.com:443" });
    const row = await store.db
      .selectFrom("reactor_invocations")
      .select("destination")
      .where("id", "=", id)
      .executeTakeFirstOrThrow();
    expect(row.destination).toBe("https://hooks.example.com:443");
  });

  it("deletes an invocation after its retention only once its webhook is settled", async () => {
    const ids = [await enqueue(20 * 86_400_000), await enqueue(20 * 86_400_000)];
    await drain("runner", 20 * 86_400_000);
    const claim = await invocations.claimDelivery({
      owner: "d",
      now: at(20 * 86_400_000),
      leaseUntil: () => at(20 * 86_400_000 + 20_000),
      perDestination: 2,
    });
    // Both became due at once: either may be claimed first.
    expect(ids).toContain(claim?.id);
    const settled = claim!.id;
    const undelivered = ids.find((id) => id !== settled)!;
    await invocations.recordDelivery(claim!, "d", {
      attempt: {
        attempt: 1,
        attemptedAt: at(20 * 86_400_000),
        durationMs: 1,
        responseStatus: 410,
        error: null,
      },
      next: { status: "failed" },
      destination: { up: true },
    });
    expect(await invocations.deleteSettledBefore(at(20 * 86_400_000))).toBe(0);
    expect(await invocations.deleteSettledBefore(at(20 * 86_400_000 + 1))).toBe(1);
    expect(await invocations.findById(tenantId, settled)).toBeUndefined();
    expect(await invocations.findById(tenantId, undelivered)).toBeDefined();
  });
});

function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}
