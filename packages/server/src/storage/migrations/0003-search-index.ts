import { SqliteAdapter, sql, type Kysely, type RawBuilder } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// Search (DESIGN §7) answers in created_at order, a page at a time, with an exact total. The index tables of
// 0002 held only (tenant, value, token), so every search had to visit each matching token to sort and to filter
// expiry, type and dates. Here every index row also carries the token's created_at (in its key, so the order
// comes from the index), type and expires_at (so a count needs no visit to the token), and containers are indexed
// by every ancestor path, so that a subtree search and an access rule are one equality lookup each.

const BATCH = 500;

export async function up(db: Kysely<any>): Promise<void> {
  const sqlite = db.getExecutor().adapter instanceof SqliteAdapter;
  // Byte order on PostgreSQL too: ranges and ORDER BY must not depend on the server's locale, and must agree
  // with SQLite's BINARY collation.
  const text: "text" | RawBuilder<unknown> = sqlite ? "text" : sql`text collate "C"`;

  if (!sqlite) {
    // The old index tables reference tokens(id); they go first so the key columns can change collation.
    for (const table of ["token_index_values", "token_containers", "token_metadata"]) {
      await sql`alter table ${sql.table(table)} drop constraint ${sql.ref(`${table}_token_fk`)}`.execute(db);
    }
    for (const column of ["id", "type", "created_at"]) {
      await sql`alter table tokens alter column ${sql.ref(column)} type text collate "C"`.execute(db);
    }
  }

  const index = async (table: string, keyColumns: string[], extra: string[] = []) => {
    let builder = db.schema.createTable(table).addColumn("tenant_id", text, (c) => c.notNull());
    for (const column of keyColumns) builder = builder.addColumn(column, text, (c) => c.notNull());
    for (const column of extra) builder = builder.addColumn(column, "integer", (c) => c.notNull());
    builder = builder
      .addColumn("created_at", text, (c) => c.notNull())
      .addColumn("token_id", text, (c) => c.notNull())
      .addColumn("type", text, (c) => c.notNull())
      .addColumn("expires_at", text)
      .addPrimaryKeyConstraint(`${table}_pk`, ["tenant_id", ...keyColumns, "created_at", "token_id"] as any)
      .addForeignKeyConstraint(
        `${table}_token_fk`,
        ["tenant_id", "token_id"],
        "tokens",
        ["tenant_id", "id"],
        (fk) => fk.onDelete("cascade"),
      );
    // The key is the index: rows are stored in it, and a count reads nothing else.
    if (sqlite) builder = builder.modifyEnd(sql`without rowid`);
    await builder.execute();
  };
  await index("token_data_index", ["blind_value"]);
  await index("token_metadata_index", ["key", "value_folded"]);
  await index("token_container_index", ["path"], ["exact"]);
  await db.schema
    .createIndex("token_data_index_token_idx")
    .on("token_data_index")
    .columns(["tenant_id", "token_id"])
    .execute();
  await db.schema
    .createIndex("token_metadata_index_token_idx")
    .on("token_metadata_index")
    .columns(["tenant_id", "token_id"])
    .execute();
  // Access rules are checked per token: "does this token have a container under one of these paths".
  await db.schema
    .createIndex("token_container_index_token_idx")
    .on("token_container_index")
    .columns(["tenant_id", "token_id", "path"])
    .execute();

  await sql`
    insert into token_data_index (tenant_id, blind_value, created_at, token_id, type, expires_at)
    select v.tenant_id, v.blind_value, t.created_at, v.token_id, t.type, t.expires_at
    from token_index_values v join tokens t on t.tenant_id = v.tenant_id and t.id = v.token_id`.execute(db);
  await sql`
    insert into token_metadata_index (tenant_id, key, value_folded, created_at, token_id, type, expires_at)
    select m.tenant_id, m.key, m.value_folded, t.created_at, m.token_id, t.type, t.expires_at
    from token_metadata m join tokens t on t.tenant_id = m.tenant_id and t.id = m.token_id`.execute(db);

  let after: { tenant_id: string; id: string } | undefined;
  for (;;) {
    let query = db
      .selectFrom("tokens")
      .select(["tenant_id", "id", "containers", "created_at", "type", "expires_at"])
      .orderBy("tenant_id")
      .orderBy("id")
      .limit(BATCH);
    if (after !== undefined) {
      const { tenant_id, id } = after;
      query = query.where((eb) =>
        eb.or([
          eb("tenant_id", ">", tenant_id),
          eb.and([eb("tenant_id", "=", tenant_id), eb("id", ">", id)]),
        ]),
      );
    }
    const tokens = (await query.execute()) as {
      tenant_id: string;
      id: string;
      containers: string;
      created_at: string;
      type: string;
      expires_at: string | null;
    }[];
    if (tokens.length === 0) break;
    const rows = tokens.flatMap((t) =>
      [...containerPaths(JSON.parse(t.containers) as string[])].map(([path, exact]) => ({
        tenant_id: t.tenant_id,
        path,
        exact: exact ? 1 : 0,
        created_at: t.created_at,
        token_id: t.id,
        type: t.type,
        expires_at: t.expires_at,
      })),
    );
    if (rows.length > 0) await db.insertInto("token_container_index").values(rows).execute();
    after = tokens.at(-1);
  }

  for (const table of ["token_index_values", "token_containers", "token_metadata"]) {
    await db.schema.dropTable(table).execute();
  }

  // Searches without an index term walk these in created_at order; expires_at rides along so that neither
  // the walk nor the count has to visit the token itself.
  await db.schema.dropIndex("tokens_created_idx").execute();
  await db.schema.dropIndex("tokens_type_idx").execute();
  await db.schema
    .createIndex("tokens_created_idx")
    .on("tokens")
    .columns(["tenant_id", "created_at", "id", "expires_at"])
    .execute();
  await db.schema
    .createIndex("tokens_type_idx")
    .on("tokens")
    .columns(["tenant_id", "type", "created_at", "id", "expires_at"])
    .execute();
}

/** Every path a container lies under, except the root, which holds everything; true where it is the container. */
function containerPaths(containers: readonly string[]): Map<string, boolean> {
  const paths = new Map<string, boolean>();
  for (const container of containers) {
    if (container === "/") paths.set("/", true);
    let end = container.indexOf("/", 1);
    while (end !== -1) {
      const path = container.slice(0, end + 1);
      paths.set(path, paths.get(path) === true || path === container);
      end = container.indexOf("/", end + 1);
    }
  }
  return paths;
}

export async function down(): Promise<void> {
  throw new Error("0003-search-index cannot be undone: restore a backup taken before upgrading");
}
