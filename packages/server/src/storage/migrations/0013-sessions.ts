import { SqliteAdapter, sql, type Kysely, type RawBuilder } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// Sessions (docs/sessions.md): a public key creates one and gets its key and a nonce; a private key authorizes
// the nonce once, with permissions and condition rules; the session key then works until `expires_at`. The key
// and the nonce are stored only as SHA-256 digests, like Application keys.
export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  const text: "text" | RawBuilder<unknown> = sqlite ? "text" : sql`text collate "C"`;

  await db.schema
    .createTable("sessions")
    .addColumn("id", text, (c) => c.primaryKey())
    .addColumn("tenant_id", text, (c) => c.notNull().references("tenants.id").onDelete("cascade"))
    .addColumn("key_hash", text, (c) => c.notNull().unique())
    .addColumn("nonce_hash", text, (c) => c.notNull().unique())
    // The public Application that created it; its sessions go with it.
    .addColumn("created_by", text, (c) => c.notNull().references("applications.id").onDelete("cascade"))
    .addColumn("created_at", text, (c) => c.notNull())
    .addColumn("expires_at", text, (c) => c.notNull())
    // Null until authorized; then the private Application that did, which bounds the session at every request.
    .addColumn("authorized_by", text, (c) => c.references("applications.id").onDelete("cascade"))
    .addColumn("authorized_at", text)
    // JSON, as on applications: what the authorization granted.
    .addColumn("permissions", "text")
    .addColumn("rules", "text")
    .execute();
  await db.schema.createIndex("sessions_expiry_idx").on("sessions").column("expires_at").execute();
  await db.schema.createIndex("sessions_created_by_idx").on("sessions").column("created_by").execute();
  await db.schema.createIndex("sessions_authorized_by_idx").on("sessions").column("authorized_by").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("sessions").execute();
}
