import type { Kysely } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable("tokens")
    .addColumn("tenant_id", "text", (c) => c.notNull().references("tenants.id").onDelete("cascade"))
    .addColumn("id", "text", (c) => c.notNull())
    .addColumn("type", "text", (c) => c.notNull())
    .addColumn("ciphertext", "text", (c) => c.notNull())
    .addColumn("key_version", "integer", (c) => c.notNull())
    .addColumn("fingerprint", "text")
    .addColumn("fingerprint_expression", "text")
    .addColumn("mask", "text")
    .addColumn("search_indexes", "text", (c) => c.notNull())
    .addColumn("metadata", "text", (c) => c.notNull())
    .addColumn("containers", "text", (c) => c.notNull())
    .addColumn("expires_at", "text")
    .addColumn("created_by", "text")
    .addColumn("created_at", "text", (c) => c.notNull())
    .addColumn("modified_by", "text")
    .addColumn("modified_at", "text")
    // Caller-chosen ids are unique per tenant, not globally: one tenant's ids reveal nothing to another.
    .addPrimaryKeyConstraint("tokens_pk", ["tenant_id", "id"])
    .execute();
  await db.schema
    .createIndex("tokens_created_idx")
    .on("tokens")
    .columns(["tenant_id", "created_at", "id"])
    .execute();
  await db.schema
    .createIndex("tokens_fingerprint_idx")
    .on("tokens")
    .columns(["tenant_id", "fingerprint"])
    .execute();
  await db.schema.createIndex("tokens_type_idx").on("tokens").columns(["tenant_id", "type"]).execute();
  await db.schema.createIndex("tokens_expires_idx").on("tokens").column("expires_at").execute();
  await db.schema
    .createIndex("tokens_key_version_idx")
    .on("tokens")
    .columns(["tenant_id", "key_version"])
    .execute();

  // One row per evaluated search index, container and metadata entry, so that every searchable field is an
  // indexed lookup scoped by tenant first (DESIGN §4). The token id comes last in each key.
  const child = async (table: string, columns: string[]) => {
    let builder = db.schema.createTable(table).addColumn("tenant_id", "text", (c) => c.notNull());
    for (const column of columns) builder = builder.addColumn(column, "text", (c) => c.notNull());
    await builder
      .addColumn("token_id", "text", (c) => c.notNull())
      .addPrimaryKeyConstraint(`${table}_pk`, ["tenant_id", ...columns, "token_id"] as any)
      .addForeignKeyConstraint(
        `${table}_token_fk`,
        ["tenant_id", "token_id"],
        "tokens",
        ["tenant_id", "id"],
        (fk) => fk.onDelete("cascade"),
      )
      .execute();
    await db.schema.createIndex(`${table}_token_idx`).on(table).columns(["tenant_id", "token_id"]).execute();
  };
  await child("token_index_values", ["blind_value"]);
  await child("token_containers", ["container"]);
  await child("token_metadata", ["key", "value_folded"]);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const table of ["token_metadata", "token_containers", "token_index_values", "tokens"]) {
    await db.schema.dropTable(table).execute();
  }
}
