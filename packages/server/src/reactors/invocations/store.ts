import type { Selectable } from "kysely";
import type { Executor, Store } from "../../storage/database.js";
import type { ReactorInvocationsTable } from "../../storage/schema.js";
import { destinationOf } from "../../webhooks/callback-url.js";
import { countBy, destinationQueries, loadOf, type DestinationFared } from "./destinations.js";
import type { DeliveryAttempt, DeliveryStatus, InvocationRecord, InvocationStatus } from "./types.js";

type Row = Selectable<ReactorInvocationsTable>;

function fromRow(row: Row): InvocationRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    reactorId: row.reactor_id,
    requestedBy: row.requested_by,
    callbackUrl: row.callback_url,
    destination: row.destination ?? destinationOf(row.callback_url),
    timeoutMs: Number(row.timeout_ms),
    status: row.status as InvocationStatus,
    runAttempts: Number(row.run_attempts),
    runAfter: row.run_after,
    keyVersion: Number(row.key_version),
    args: row.args,
    outcome: row.outcome,
    deliveryStatus: row.delivery_status as DeliveryStatus | null,
    deliveryAttempts: Number(row.delivery_attempts),
    deliverAfter: row.deliver_after,
    createdAt: row.created_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    deliveredAt: row.delivered_at,
  };
}

export interface NewInvocation {
  readonly id: string;
  readonly tenantId: string;
  readonly reactorId: string;
  readonly requestedBy: string;
  readonly callbackUrl: string;
  readonly timeoutMs: number;
  readonly args: string;
  readonly keyVersion: number;
  readonly createdAt: string;
}

/** A claim: the work is this instance's until `leaseUntil`; `owner` and the attempt number fence later writes. */
export interface Claim {
  readonly owner: string;
  readonly now: string;
  /** The lease's end for a claimed row, computed from the row itself. */
  leaseUntil(record: InvocationRecord): string;
}

export interface DeliveryClaim extends Claim {
  /** Attempts in flight to one destination at most, counted over every instance on the store. */
  readonly perDestination: number;
}

export interface FinishedRun {
  readonly status: "completed" | "failed";
  readonly outcome: string;
  readonly keyVersion: number;
  readonly finishedAt: string;
}

export interface DeliveryResult {
  readonly attempt: DeliveryAttempt;
  /** delivered, failed (given up), or pending again with the time of the next attempt. */
  readonly next: { status: "delivered" } | { status: "failed" } | { status: "pending"; after: string };
  /**
   * How the destination fared: it answered (any pause ends), or it is down, paused until the time `pausedUntil`
   * gives for its count of consecutive failures, this one included.
   */
  readonly destination: DestinationFared;
}

/** How many candidates one claim looks at before it gives up (each refused only by a race with another claim). */
const MAX_CLAIM_TRIES = 8;

/**
 * The durable queue of asynchronous invocations. A claim is a conditional update inside a transaction; on
 * PostgreSQL the candidate row is locked with `FOR UPDATE SKIP LOCKED`, so instances claiming at the same time
 * take different rows instead of queueing on one. SQLite has one writer at a time, which serialises claims.
 * Every write after a claim is fenced by the owner and the attempt number, so an instance whose lease ran out
 * (and whose work another instance took over) can no longer change the row.
 */
export function invocationStore(store: Pick<Store, "db" | "dialect" | "transaction">) {
  const { db } = store;
  const locking = store.dialect === "postgres";
  const lanes = destinationQueries(db, locking);

  /**
   * Invocations of a tenant not yet settled: waiting to run or running, or their webhook not yet settled. One
   * statement, so one snapshot: counted in two, a run that finished between them (running, then awaiting its
   * webhook) was counted twice, and a tenant below its bound was refused.
   */
  async function unsettled(trx: Executor, tenantId: string): Promise<number> {
    const row = await trx
      .selectFrom("reactor_invocations")
      .select((eb) => eb.fn.countAll().as("n"))
      .where("tenant_id", "=", tenantId)
      .where((eb) =>
        eb.or([eb("status", "in", ["pending", "running"]), eb("delivery_status", "=", "pending")]),
      )
      .executeTakeFirstOrThrow();
    return Number(row.n);
  }

  async function insertRow(trx: Executor, invocation: NewInvocation): Promise<void> {
    await trx
      .insertInto("reactor_invocations")
      .values({
        id: invocation.id,
        tenant_id: invocation.tenantId,
        reactor_id: invocation.reactorId,
        requested_by: invocation.requestedBy,
        callback_url: invocation.callbackUrl,
        destination: destinationOf(invocation.callbackUrl),
        timeout_ms: invocation.timeoutMs,
        status: "pending",
        run_attempts: 0,
        run_after: invocation.createdAt,
        run_owner: null,
        args: invocation.args,
        outcome: null,
        key_version: invocation.keyVersion,
        delivery_status: null,
        delivery_attempts: 0,
        deliver_after: null,
        delivery_owner: null,
        created_at: invocation.createdAt,
        started_at: null,
        finished_at: null,
        delivered_at: null,
      })
      .execute();
  }

  return {
    /** Invocations of the tenant waiting to run or running, or whose webhook is not yet settled. */
    unsettled: (tenantId: string): Promise<number> => unsettled(db, tenantId),

    /**
     * Inserts the invocation unless its tenant already has `maxUnsettled` unsettled ones (waiting to run or running,
     * or their webhook not settled); false when it has. On PostgreSQL the count and the insert hold an advisory
     * lock of the tenant's, so concurrent requests cannot all pass at `maxUnsettled - 1`; SQLite runs one
     * transaction at a time.
     */
    async insert(invocation: NewInvocation, maxUnsettled = Number.POSITIVE_INFINITY): Promise<boolean> {
      return store.transaction(
        async (trx) => {
          if (
            maxUnsettled !== Number.POSITIVE_INFINITY &&
            (await unsettled(trx, invocation.tenantId)) >= maxUnsettled
          )
            return false;
          await insertRow(trx, invocation);
          return true;
        },
        { lock: `tessera:invocations:${invocation.tenantId}` },
      );
    },

    /**
     * An invocation and its delivery attempts as of one moment. Read apart, a delivery recorded between the two
     * reads would show its attempt beside the lease that was running it.
     */
    async findById(
      tenantId: string,
      id: string,
    ): Promise<{ record: InvocationRecord; attempts: DeliveryAttempt[] } | undefined> {
      return store.transaction(
        async (trx) => {
          const row = await trx
            .selectFrom("reactor_invocations")
            .selectAll()
            .where("tenant_id", "=", tenantId)
            .where("id", "=", id)
            .executeTakeFirst();
          if (row === undefined) return undefined;
          const attempts = await trx
            .selectFrom("webhook_delivery_attempts")
            .selectAll()
            .where("invocation_id", "=", id)
            .orderBy("attempt")
            .execute();
          return {
            record: fromRow(row),
            attempts: attempts.map((a) => ({
              attempt: Number(a.attempt),
              attemptedAt: a.attempted_at,
              durationMs: Number(a.duration_ms),
              responseStatus: a.response_status === null ? null : Number(a.response_status),
              error: a.error,
            })),
          };
        },
        { snapshot: true },
      );
    },

    /**
     * The next run that is due — pending, or running under a lease that has run out (its instance died) — now
     * this claim's, with its attempt counted.
     */
    async claimRun(claim: Claim): Promise<InvocationRecord | undefined> {
      return store.transaction(async (trx) => {
        // Tenants take turns by load: the tenant with the fewest runs under way goes first, so one that queued
        // many long runs delays another's by one run at most, and has every slot when nobody else waits.
        const running = await trx
          .selectFrom("reactor_invocations")
          .select("tenant_id")
          .where("status", "=", "running")
          .where("run_after", ">", claim.now)
          .execute();
        const load = countBy(running, (r) => r.tenant_id);
        const row = await trx
          .selectFrom("reactor_invocations")
          .selectAll()
          .where("status", "in", ["pending", "running"])
          .where("run_after", "<=", claim.now)
          .$if(load.size > 0, (query) => query.orderBy(loadOf("tenant_id", load)))
          .orderBy("run_after")
          .limit(1)
          .$if(locking, (query) => query.forUpdate().skipLocked())
          .executeTakeFirst();
        if (row === undefined) return undefined;
        const record = fromRow(row);
        const claimed: InvocationRecord = {
          ...record,
          status: "running",
          runAttempts: record.runAttempts + 1,
          startedAt: claim.now,
        };
        await trx
          .updateTable("reactor_invocations")
          .set({
            status: "running",
            run_attempts: claimed.runAttempts,
            run_owner: claim.owner,
            run_after: claim.leaseUntil(record),
            started_at: claim.now,
          })
          .where("id", "=", record.id)
          .where("run_attempts", "=", record.runAttempts)
          .execute();
        return claimed;
      });
    },

    /** Records how the run ended and queues its webhook; false if this claim had lost the row meanwhile. */
    async finishRun(claimed: InvocationRecord, owner: string, finished: FinishedRun): Promise<boolean> {
      const result = await db
        .updateTable("reactor_invocations")
        .set({
          status: finished.status,
          outcome: finished.outcome,
          key_version: finished.keyVersion,
          args: null,
          run_owner: null,
          finished_at: finished.finishedAt,
          delivery_status: "pending",
          deliver_after: finished.finishedAt,
        })
        .where("id", "=", claimed.id)
        .where("status", "=", "running")
        .where("run_owner", "=", owner)
        .where("run_attempts", "=", claimed.runAttempts)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    /** Gives a claimed run back without counting it (the worker pool was full, or the instance is stopping). */
    async releaseRun(claimed: InvocationRecord, owner: string, runAfter: string): Promise<void> {
      await db
        .updateTable("reactor_invocations")
        .set({
          status: "pending",
          run_attempts: claimed.runAttempts - 1,
          run_owner: null,
          run_after: runAfter,
        })
        .where("id", "=", claimed.id)
        .where("status", "=", "running")
        .where("run_owner", "=", owner)
        .where("run_attempts", "=", claimed.runAttempts)
        .execute();
    },

    /**
     * The next webhook due, now this claim's until its lease ends. Fair between destinations and tenants
     * (docs/reactors.md#fairness): a paused destination, or one with `perDestination` attempts in flight, is
     * skipped; among the rest the tenant with the fewest deliveries in flight goes first, then the destination
     * whose turn is oldest, then the delivery due longest.
     */
    async claimDelivery(claim: DeliveryClaim): Promise<InvocationRecord | undefined> {
      const attempt = () =>
        store.transaction(async (trx) => {
          const load = await lanes.deliveriesInFlight(trx, claim.now);
          const excluded = new Set(
            [...load.destinations].filter(([, n]) => n >= claim.perDestination).map(([name]) => name),
          );
          const missing = new Set<string>();
          for (let tries = 0; tries < MAX_CLAIM_TRIES; tries++) {
            const row = await lanes.nextDue(trx, claim.now, excluded, load.tenants);
            if (row === undefined) break;
            const record = fromRow(row);
            if (row.lane === null) {
              missing.add(record.destination);
              // Written by a version before 0011 during a rolling upgrade: its destination is set here, so that
              // the next pass finds the row the destination gets below.
              if (row.destination === null) {
                await trx
                  .updateTable("reactor_invocations")
                  .set({ destination: record.destination })
                  .where("id", "=", record.id)
                  .execute();
              }
            }
            const held = row.lane === null ? undefined : await lanes.holdDestination(trx, record.destination);
            // The counts above were read before this destination's row was held: another instance may have
            // claimed or paused it since. Read again under its row.
            if (
              held === undefined ||
              (held.pausedUntil !== null && held.pausedUntil > claim.now) ||
              (await lanes.inFlightTo(trx, record.destination, claim.now)) >= claim.perDestination
            ) {
              excluded.add(record.destination);
              continue;
            }
            const leaseUntil = claim.leaseUntil(record);
            await trx
              .updateTable("reactor_invocations")
              .set({
                delivery_owner: claim.owner,
                delivery_attempts: record.deliveryAttempts + 1,
                deliver_after: leaseUntil,
              })
              .where("id", "=", record.id)
              .where("delivery_attempts", "=", record.deliveryAttempts)
              .execute();
            await trx
              .updateTable("webhook_destinations")
              .set({ last_claimed_at: claim.now })
              .where("destination", "=", record.destination)
              .execute();
            return {
              claimed: { ...record, deliveryAttempts: record.deliveryAttempts + 1, deliverAfter: leaseUntil },
            };
          }
          return { claimed: undefined, missing };
        });
      const first = await attempt();
      if (first.claimed !== undefined || first.missing.size === 0) return first.claimed;
      await lanes.addDestinations(first.missing);
      return (await attempt()).claimed;
    },

    /** Records one delivery attempt and what comes next, in one transaction; fenced like finishRun. */
    async recordDelivery(claimed: InvocationRecord, owner: string, result: DeliveryResult): Promise<boolean> {
      return store.transaction(async (trx) => {
        const { next, attempt } = result;
        const updated = await trx
          .updateTable("reactor_invocations")
          .set({
            delivery_status: next.status,
            delivery_owner: null,
            deliver_after: next.status === "pending" ? next.after : null,
            ...(next.status === "delivered" && { delivered_at: attempt.attemptedAt }),
          })
          .where("id", "=", claimed.id)
          .where("delivery_status", "=", "pending")
          .where("delivery_owner", "=", owner)
          .where("delivery_attempts", "=", claimed.deliveryAttempts)
          .executeTakeFirst();
        if (updated.numUpdatedRows === 0n) return false;
        await trx
          .insertInto("webhook_delivery_attempts")
          .values({
            invocation_id: claimed.id,
            attempt: attempt.attempt,
            attempted_at: attempt.attemptedAt,
            duration_ms: attempt.durationMs,
            response_status: attempt.responseStatus,
            error: attempt.error,
          })
          .execute();
        await lanes.recordDestination(trx, claimed.destination, attempt.attemptedAt, result.destination);
        return true;
      });
    },

    /**
     * Gives up the deliveries still pending whose retry window closed before `before` and that are not in
     * flight: their destination stayed paused (or busy) past the window, so they never had their last attempt.
     */
    async failUndeliveredBefore(before: string, now: string): Promise<number> {
      const result = await db
        .updateTable("reactor_invocations")
        .set({ delivery_status: "failed", delivery_owner: null, deliver_after: null })
        .where("delivery_status", "=", "pending")
        .where("finished_at", "<", before)
        .where((eb) => eb.or([eb("delivery_owner", "is", null), eb("deliver_after", "<=", now)]))
        .executeTakeFirst();
      return Number(result.numUpdatedRows);
    },

    /**
     * Forgets destinations that had no turn since `before` and are not paused: a destination used again gets a
     * new row at its next claim.
     */
    async deleteIdleDestinationsBefore(before: string, now: string): Promise<number> {
      const result = await db
        .deleteFrom("webhook_destinations")
        .where("last_claimed_at", "<", before)
        .where((eb) => eb.or([eb("paused_until", "is", null), eb("paused_until", "<=", now)]))
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /** Finished invocations whose webhook is settled, older than `before`: retention has run out for them. */
    async deleteSettledBefore(before: string): Promise<number> {
      const result = await db
        .deleteFrom("reactor_invocations")
        .where("finished_at", "<", before)
        .where("delivery_status", "in", ["delivered", "failed"])
        .executeTakeFirst();
      return Number(result.numDeletedRows);
    },

    /** Counts for metrics and tests: how much work is waiting. */
    async backlog(): Promise<{ runs: number; deliveries: number }> {
      const count = async (column: "status" | "delivery_status", values: string[]) =>
        Number(
          (
            await db
              .selectFrom("reactor_invocations")
              .select((eb) => eb.fn.countAll().as("n"))
              .where(column, "in", values)
              .executeTakeFirstOrThrow()
          ).n,
        );
      return {
        runs: await count("status", ["pending", "running"]),
        deliveries: await count("delivery_status", ["pending"]),
      };
    },
  };
}

export type InvocationStore = ReturnType<typeof invocationStore>;
