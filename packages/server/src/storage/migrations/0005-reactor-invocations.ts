import { SqliteAdapter, sql, type Kysely, type RawBuilder } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// Asynchronous reactor invocations (DESIGN §8): each one is a row that any instance may claim, run, and then
// deliver as a webhook. One row carries both stages, so that "ran but never delivered" can never be lost between
// two tables. `run_after` and `deliver_after` double as leases: a claim moves them past the time the work may
// take, so the work of an instance that died becomes claimable again once its lease runs out.
export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const text: "text" | RawBuilder<unknown> = sqlite ? "text" : sql`text collate "C"`;

  await db.schema
    .createTable("reactor_invocations")
    .addColumn("id", text, (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id").onDelete("cascade"))
    // No foreign key: an invocation outlives the deletion of its reactor, and reports it.
    .addColumn("reactor_id", "text", (c) => c.notNull())
    // The Application that asked; only it may read the invocation.
    .addColumn("requested_by", "text", (c) => c.notNull())
    .addColumn("callback_url", "text", (c) => c.notNull())
    .addColumn("timeout_ms", "integer", (c) => c.notNull())
    // pending → running → completed | failed
    .addColumn("status", text, (c) => c.notNull())
    .addColumn("run_attempts", "integer", (c) => c.notNull())
    .addColumn("run_after", text, (c) => c.notNull())
    .addColumn("run_owner", "text")
    // Sealed (AES-256-GCM under the tenant's data key): the detokenized arguments until the run ends, then the
    // outcome. Both hold what tokens hold, so neither is ever stored in clear.
    .addColumn("args", "text")
    .addColumn("outcome", "text")
    .addColumn("key_version", "integer", (c) => c.notNull())
    // null until the run ends; pending → delivered | failed
    .addColumn("delivery_status", text)
    .addColumn("delivery_attempts", "integer", (c) => c.notNull())
    .addColumn("deliver_after", text)
    .addColumn("delivery_owner", "text")
    .addColumn("created_at", text, (c) => c.notNull())
    .addColumn("started_at", "text")
    .addColumn("finished_at", "text")
    .addColumn("delivered_at", "text")
    .execute();
  // The two queues: what may run next, and what may be delivered next, each in the order it became due.
  await db.schema
    .createIndex("reactor_invocations_run_idx")
    .on("reactor_invocations")
    .columns(["status", "run_after"])
    .execute();
  await db.schema
    .createIndex("reactor_invocations_delivery_idx")
    .on("reactor_invocations")
    .columns(["delivery_status", "deliver_after"])
    .execute();
  await db.schema
    .createIndex("reactor_invocations_tenant_idx")
    .on("reactor_invocations")
    .columns(["tenant_id", "reactor_id", "created_at"])
    .execute();
  // Sweeping finished invocations after their retention.
  await db.schema
    .createIndex("reactor_invocations_finished_idx")
    .on("reactor_invocations")
    .column("finished_at")
    .execute();

  // One row per attempt to deliver a webhook: when, what the receiver answered, or why it could not be reached.
  await db.schema
    .createTable("webhook_delivery_attempts")
    .addColumn("invocation_id", text, (c) =>
      c.notNull().references("reactor_invocations.id").onDelete("cascade"),
    )
    .addColumn("attempt", "integer", (c) => c.notNull())
    .addColumn("attempted_at", "text", (c) => c.notNull())
    .addColumn("duration_ms", "integer", (c) => c.notNull())
    .addColumn("response_status", "integer")
    .addColumn("error", "text")
    .addPrimaryKeyConstraint("webhook_delivery_attempts_pk", ["invocation_id", "attempt"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("webhook_delivery_attempts").execute();
  await db.schema.dropTable("reactor_invocations").execute();
}
