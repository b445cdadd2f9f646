import { SqliteAdapter, sql, type Kysely, type RawBuilder } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// Fair webhook delivery (docs/reactors.md#fairness). Every delivery belongs to a destination, the scheme, host and
// port of its callback URL: attempts in flight to one destination are capped across all instances, and a
// destination that does not answer is paused with a backoff of its own, so that a slow or dead receiver holds up
// only its own deliveries. `webhook_destinations` has one row per destination: the row claims lock (which makes
// the cap exact between instances), when it last had a turn (round robin), and its pause.
export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const text: "text" | RawBuilder<unknown> = sqlite ? "text" : sql`text collate "C"`;

  await db.schema.alterTable("reactor_invocations").addColumn("destination", text).execute();
  const rows = await db.selectFrom("reactor_invocations").select(["id", "callback_url"]).execute();
  for (const row of rows as { id: string; callback_url: string }[]) {
    await db
      .updateTable("reactor_invocations")
      .set({ destination: destinationOf(row.callback_url) })
      .where("id", "=", row.id)
      .execute();
  }
  // The due deliveries of one destination, in the order they became due.
  await db.schema
    .createIndex("reactor_invocations_destination_idx")
    .on("reactor_invocations")
    .columns(["destination", "delivery_status", "deliver_after"])
    .execute();
  // Deliveries in flight (a lease held): what the caps count.
  await db.schema
    .createIndex("reactor_invocations_delivery_owner_idx")
    .on("reactor_invocations")
    .column("delivery_owner")
    .execute();
  // A tenant's unsettled invocations (queued or running, or a webhook not yet settled): the per-tenant bound.
  await db.schema
    .createIndex("reactor_invocations_tenant_status_idx")
    .on("reactor_invocations")
    .columns(["tenant_id", "status"])
    .execute();
  await db.schema
    .createIndex("reactor_invocations_tenant_delivery_idx")
    .on("reactor_invocations")
    .columns(["tenant_id", "delivery_status"])
    .execute();

  await db.schema
    .createTable("webhook_destinations")
    .addColumn("destination", text, (c) => c.primaryKey())
    .addColumn("last_claimed_at", text, (c) => c.notNull())
    // Consecutive attempts the destination did not answer (or answered 429, 502, 503, 504).
    .addColumn("failures", "integer", (c) => c.notNull())
    // null, or until when no attempt starts to it.
    .addColumn("paused_until", text)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("webhook_destinations").execute();
  for (const index of [
    "reactor_invocations_tenant_delivery_idx",
    "reactor_invocations_tenant_status_idx",
    "reactor_invocations_delivery_owner_idx",
    "reactor_invocations_destination_idx",
  ]) {
    await db.schema.dropIndex(index).execute();
  }
  await db.schema.alterTable("reactor_invocations").dropColumn("destination").execute();
}

/** The callback URL's scheme, host and port, the default port spelt out. */
function destinationOf(callbackUrl: string): string {
  try {
    const url = new URL(callbackUrl);
    const port = url.port !== "" ? url.port : url.protocol === "https:" ? "443" : "80";
    return `${url.protocol}//${url.hostname}:${port}`;
  } catch {
    return callbackUrl;
  }
}
