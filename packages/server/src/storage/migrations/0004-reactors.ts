import { SqliteAdapter, sql, type Kysely, type RawBuilder } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// Reactors (spec §2.5). The configuration is sealed like token data (AES-256-GCM under the tenant's data key,
// `key_version` naming which one) because reactors keep API secrets there. `version` grows with every update:
// the invocation pool keys its workers by id and version, so an update never meets a worker with the old code.
export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  // Byte order on PostgreSQL too, as in 0003: listing order and the name filter must not depend on the locale.
  const text: "text" | RawBuilder<unknown> = sqlite ? "text" : sql`text collate "C"`;

  await db.schema
    .createTable("reactors")
    .addColumn("id", text, (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull())
    // The name case-folded by the application, so that the filter folds alike on both engines.
    .addColumn("name_folded", text, (c) => c.notNull())
    .addColumn("code", "text", (c) => c.notNull())
    .addColumn("configuration", "text", (c) => c.notNull())
    .addColumn("key_version", "integer", (c) => c.notNull())
    // A deleted Application leaves its reactors in place, running without `svc`.
    .addColumn("application_id", "text", (c) => c.references("applications.id").onDelete("set null"))
    .addColumn("version", "integer", (c) => c.notNull())
    .addColumn("created_by", "text")
    .addColumn("created_at", text, (c) => c.notNull())
    .addColumn("modified_by", "text")
    .addColumn("modified_at", "text")
    .execute();
  await db.schema
    .createIndex("reactors_tenant_created_idx")
    .on("reactors")
    .columns(["tenant_id", "created_at", "id"])
    .execute();
  // Deleting an Application looks up its reactors to clear the reference.
  await db.schema.createIndex("reactors_application_idx").on("reactors").column("application_id").execute();
  await db.schema
    .createIndex("reactors_key_version_idx")
    .on("reactors")
    .columns(["tenant_id", "key_version"])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable("reactors").execute();
}
