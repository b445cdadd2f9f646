import type { Kysely } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("tessera_meta")
    .addColumn("key", "text", (c) => c.primaryKey())
    .addColumn("value", "text", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("tenants")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("created_by", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .execute();

  await db.schema
    .createTable("tenant_keys")
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id").onDelete("cascade"))
    .addColumn("purpose", "text", (c) => c.notNull())
    .addColumn("version", "integer", (c) => c.notNull())
    .addColumn("wrapped_key", "text", (c) => c.notNull())
    .addColumn("created_at", "text", (c) => c.notNull())
    .addPrimaryKeyConstraint("tenant_keys_pk", ["tenant_id", "purpose", "version"])
    .execute();

  await db.schema
    .createTable("applications")
    .addColumn("id", "text", (c) => c.primaryKey())
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id").onDelete("cascade"))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("key_hash", "text", (c) => c.notNull().unique())
    .addColumn("permissions", "text", (c) => c.notNull())
    .addColumn("rules", "text", (c) => c.notNull())
    .addColumn("created_by", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("modified_by", "text")
    .addColumn("modified_at", "text")
    .addColumn("expires_at", "text")
    .execute();
  await db.schema
    .createIndex("applications_tenant_created_idx")
    .on("applications")
    .columns(["tenant_id", "created_at", "id"])
    .execute();
  await db.schema.createIndex("applications_expires_idx").on("applications").column("expires_at").execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ["applications", "tenant_keys", "tenants", "tessera_meta"]) {
    await db.schema.dropTable(table).execute();
  }
}
