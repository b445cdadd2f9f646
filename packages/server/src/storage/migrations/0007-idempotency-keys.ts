import { SqliteAdapter, sql, type Kysely, type RawBuilder } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// Idempotency keys (SVC-IDEMPOTENCY-KEY): the first request with a key claims it; its answer is kept, sealed,
// for a day, and a repeat of the same request gets that answer again instead of acting twice.
export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const text: "text" | RawBuilder<unknown> = sqlite ? "text" : sql`text collate "C"`;

  await db.schema
    .createTable("idempotency_keys")
    .addColumn("tenant_id", text, (c) => c.notNull().references("tenants.id").onDelete("cascade"))
    // Keys are the caller's: two Applications may use the same one without meeting.
    .addColumn("application_id", text, (c) => c.notNull())
    .addColumn("key", text, (c) => c.notNull())
    // SHA-256 of the method, route and body: a different request under the same key is refused.
    .addColumn("request_hash", "text", (c) => c.notNull())
    // in_flight until the answer is stored; then done.
    .addColumn("state", "text", (c) => c.notNull())
    .addColumn("response_status", "integer")
    // base64 of AES-256-GCM output of the answer (headers and body): it may hold token data or a new API key.
    .addColumn("response", "text")
    .addColumn("key_version", "integer")
    .addColumn("created_at", text, (c) => c.notNull())
    .addColumn("expires_at", text, (c) => c.notNull())
    .addPrimaryKeyConstraint("idempotency_keys_pk", ["tenant_id", "application_id", "key"])
    .execute();
  await db.schema
    .createIndex("idempotency_keys_expiry_idx")
    .on("idempotency_keys")
    .column("expires_at")
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("idempotency_keys").execute();
}
