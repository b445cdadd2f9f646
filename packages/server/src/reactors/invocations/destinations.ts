import { sql, type Expression, type Selectable } from "kysely";
import type { Executor } from "../../storage/database.js";
import type { ReactorInvocationsTable } from "../../storage/schema.js";
import { destinationOf } from "../../webhooks/callback-url.js";

type Row = Selectable<ReactorInvocationsTable>;

/**
 * How a webhook's destination fared: it answered (any pause ends), or it is down, paused until the time
 * `pausedUntil` gives for its count of consecutive failures, this one included.
 */
export type DestinationFared =
  { readonly up: true } | { readonly up: false; pausedUntil(failures: number): string };

/**
 * `case <column> when <key> then <count> … else 0 end`, to order rows by a load counted in JS. Only made when
 * some load was counted: a bare `0` in ORDER BY would be read by SQLite as a column position.
 */
export function loadOf(column: string, counts: ReadonlyMap<string, number>): Expression<number> {
  const whens = [...counts].map(([key, count]) => sql`when ${key} then ${count}`);
  return sql<number>`case ${sql.ref(column)} ${sql.join(whens, sql` `)} else 0 end`;
}

export function countBy<T>(rows: readonly T[], key: (row: T) => string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const row of rows) counts.set(key(row), (counts.get(key(row)) ?? 0) + 1);
  return counts;
}

/**
 * The webhook destinations' side of the delivery queue (webhook_destinations): which deliveries are in flight,
 * which is due next, and each destination's turn, load and pause. `locking`: PostgreSQL, whose claims lock rows.
 */
export function destinationQueries(db: Executor, locking: boolean) {
  return {
    /** Deliveries in flight (claimed, their lease not run out) by tenant and destination. */
    async deliveriesInFlight(trx: Executor, now: string) {
      const rows = await trx
        .selectFrom("reactor_invocations")
        .select(["tenant_id", "destination", "callback_url"])
        .where("delivery_owner", "is not", null)
        .where("delivery_status", "=", "pending")
        .where("deliver_after", ">", now)
        .execute();
      return {
        tenants: countBy(rows, (row) => row.tenant_id),
        destinations: countBy(rows, (row) => row.destination ?? destinationOf(row.callback_url)),
      };
    },

    /** The next due delivery whose destination is not paused or excluded: least loaded tenant, then turn, then age. */
    async nextDue(
      trx: Executor,
      now: string,
      excluded: ReadonlySet<string>,
      tenantLoad: ReadonlyMap<string, number>,
    ): Promise<(Row & { lane: string | null }) | undefined> {
      return trx
        .selectFrom("reactor_invocations as r")
        .leftJoin("webhook_destinations as d", "d.destination", "r.destination")
        .selectAll("r")
        .select("d.destination as lane")
        .where("r.delivery_status", "=", "pending")
        .where("r.deliver_after", "<=", now)
        .where((eb) => eb.or([eb("d.paused_until", "is", null), eb("d.paused_until", "<=", now)]))
        .$if(excluded.size > 0, (query) =>
          query.where((eb) =>
            eb.or([eb("r.destination", "is", null), eb("r.destination", "not in", [...excluded])]),
          ),
        )
        .$if(tenantLoad.size > 0, (query) => query.orderBy(loadOf("r.tenant_id", tenantLoad)))
        .orderBy(sql`coalesce(${sql.ref("d.last_claimed_at")}, '')`)
        .orderBy("r.deliver_after")
        .orderBy("r.created_at")
        .orderBy("r.id")
        .limit(1)
        .$if(locking, (query) => query.forUpdate("r").skipLocked())
        .executeTakeFirst();
    },

    /**
     * Holds the destination's row for this claim, or answers undefined when another claim holds it: it is that
     * claim's turn (PostgreSQL, `SKIP LOCKED`; SQLite runs one claim at a time). A claim never waits for a lock, so
     * claims that each hold one destination and want another's cannot deadlock.
     */
    async holdDestination(
      trx: Executor,
      destination: string,
    ): Promise<{ pausedUntil: string | null } | undefined> {
      const row = await trx
        .selectFrom("webhook_destinations")
        .select("paused_until")
        .where("destination", "=", destination)
        .$if(locking, (query) => query.forUpdate().skipLocked())
        .executeTakeFirst();
      return row && { pausedUntil: row.paused_until };
    },

    /**
     * Rows for destinations that have none yet (a first delivery, or one the sweep forgot), each in a statement of
     * its own outside any claim: an insert may wait for another's insert of the same name, which a claim must not.
     */
    async addDestinations(names: Iterable<string>): Promise<void> {
      for (const destination of [...names].sort()) {
        await db
          .insertInto("webhook_destinations")
          .values({ destination, last_claimed_at: "", failures: 0, paused_until: null })
          .onConflict((conflict) => conflict.column("destination").doNothing())
          .execute();
      }
    },

    /** Attempts in flight to one destination, read after its row is held (a new statement: commits before are seen). */
    async inFlightTo(trx: Executor, destination: string, now: string): Promise<number> {
      const row = await trx
        .selectFrom("reactor_invocations")
        .select((eb) => eb.fn.countAll().as("n"))
        .where("delivery_owner", "is not", null)
        .where("destination", "=", destination)
        .where("delivery_status", "=", "pending")
        .where("deliver_after", ">", now)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },

    /** A destination that answered is no longer paused; one that did not is paused for longer each time. */
    async recordDestination(
      trx: Executor,
      destination: string,
      now: string,
      fared: DestinationFared,
    ): Promise<void> {
      if (fared.up) {
        await trx
          .updateTable("webhook_destinations")
          .set({ failures: 0, paused_until: null })
          .where("destination", "=", destination)
          .execute();
        return;
      }
      const row = await trx
        .insertInto("webhook_destinations")
        .values({ destination, last_claimed_at: now, failures: 1, paused_until: null })
        .onConflict((conflict) =>
          conflict.column("destination").doUpdateSet((eb) => ({
            failures: eb(eb.ref("webhook_destinations.failures"), "+", 1),
          })),
        )
        .returning("failures")
        .executeTakeFirstOrThrow();
      await trx
        .updateTable("webhook_destinations")
        .set({ paused_until: fared.pausedUntil(Number(row.failures)) })
        .where("destination", "=", destination)
        .execute();
    },
  };
}
