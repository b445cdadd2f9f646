import { SqliteAdapter, sql, type Kysely, type RawBuilder } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// The audit log: one row per security-relevant action. A row is written in the same transaction as the change it
// records (or, for a read, before the answer leaves), and sealed shortly after into a per-tenant chain: `seq`
// numbers the tenant's rows without gaps and `hash` is an HMAC over the row and the previous row's hash, so
// that a changed, removed or inserted row breaks the chain (`tessera audit verify`).
export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const text: "text" | RawBuilder<unknown> = sqlite ? "text" : sql`text collate "C"`;

  await db.schema
    .createTable("audit_log")
    .addColumn("id", text, (c) => c.primaryKey())
    .addColumn("tenant_id", text, (c) => c.notNull().references("tenants.id").onDelete("cascade"))
    .addColumn("occurred_at", text, (c) => c.notNull())
    // The Application that acted; null for Tessera itself (the command line, sweepers).
    .addColumn("actor_id", text)
    .addColumn("action", text, (c) => c.notNull())
    .addColumn("entity_type", text, (c) => c.notNull())
    .addColumn("entity_id", text)
    // JSON: the access rule that decided (container, priority, transform), when one did.
    .addColumn("rule", "text")
    // JSON: what else identifies the action (ids, a search's query with its values removed); never token data or keys.
    .addColumn("details", "text")
    .addColumn("request_id", "text")
    .addColumn("seq", "integer")
    .addColumn("hash", "text")
    .execute();
  await db.schema
    .createIndex("audit_log_chain_idx")
    .on("audit_log")
    .columns(["tenant_id", "seq"])
    .unique()
    .execute();
  await db.schema
    .createIndex("audit_log_time_idx")
    .on("audit_log")
    .columns(["tenant_id", "occurred_at", "id"])
    .execute();
  await db.schema
    .createIndex("audit_log_entity_idx")
    .on("audit_log")
    .columns(["tenant_id", "entity_type", "entity_id", "occurred_at"])
    .execute();
  await db.schema
    .createIndex("audit_log_actor_idx")
    .on("audit_log")
    .columns(["tenant_id", "actor_id", "occurred_at"])
    .execute();
  // What the sealer has still to chain: small, since it chains within a second or so.
  await db.schema
    .createIndex("audit_log_unsealed_idx")
    .on("audit_log")
    .columns(["tenant_id", "occurred_at", "id"])
    .where(sql.ref("seq"), "is", null)
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("audit_log").execute();
}
