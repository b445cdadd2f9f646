import { SqliteAdapter, sql, type Kysely } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// Every read and search writes an audit row (0006), so what each row costs to insert is paid by every request.
// 0006 gave the table six B-trees; measured on the 1M-token search corpus they took a search from 3.0 to 5.4 ms
// p50. The rows now live in their (tenant, time, id) order — SQLite: a WITHOUT ROWID table on that key, which
// replaces both the rowid table with its `id` index and the time index; PostgreSQL: the primary key — and only
// what a row's filters need is indexed when it is inserted:
// - the chain index holds sealed rows only (the sealer adds each row once it has its number);
// - the entity index holds rows with an entity id only (a search or a list has none);
// - the unsealed index holds what the sealer has still to chain, as before, now in id order;
// - there is no actor index: an actor filter reads the tenant's rows in time order (give a date range).
// There is no down: going back means restoring the backup taken before the upgrade (docs/operations.md).
export async function up(db: Kysely<any>): Promise<void> {
  if (db.getExecutor().adapter instanceof SqliteAdapter) {
    // Kysely runs SQLite migrations outside a transaction; the copy must not be seen half done.
    await sql`begin immediate`.execute(db);
    try {
      await sql`create table audit_log_0009 (
        id text not null,
        tenant_id text not null references tenants (id) on delete cascade,
        occurred_at text not null,
        actor_id text,
        action text not null,
        entity_type text not null,
        entity_id text,
        rule text,
        details text,
        request_id text,
        seq integer,
        hash text,
        primary key (tenant_id, occurred_at, id)
      ) without rowid`.execute(db);
      await sql`insert into audit_log_0009
        select id, tenant_id, occurred_at, actor_id, action, entity_type, entity_id, rule, details, request_id,
          seq, hash
        from audit_log`.execute(db);
      await sql`drop table audit_log`.execute(db);
      await sql`alter table audit_log_0009 rename to audit_log`.execute(db);
      await createChainIndex(db);
      await createEntityIndex(db);
      await createUnsealedIndex(db);
      await describeAuditLog(db);
      await sql`commit`.execute(db);
    } catch (err) {
      await sql`rollback`.execute(db);
      throw err;
    }
    return;
  }
  for (const index of [
    "audit_log_time_idx",
    "audit_log_actor_idx",
    "audit_log_chain_idx",
    "audit_log_entity_idx",
    "audit_log_unsealed_idx",
  ]) {
    await db.schema.dropIndex(index).execute();
  }
  await sql`alter table audit_log drop constraint audit_log_pkey`.execute(db);
  await sql`alter table audit_log add constraint audit_log_pkey primary key (tenant_id, occurred_at, id)`.execute(
    db,
  );
  await createChainIndex(db);
  await createEntityIndex(db);
  await createUnsealedIndex(db);
}

/**
 * SQLite has no statistics unless ANALYZE is run, and without them it takes `tenant_id = ?` to match ten rows: a
 * GET /logs for one token then walked the tenant's whole log in time order rather than look the token up in the
 * entity index. The figures given are those of a large log — a million rows, one tenant, an entity's rows a
 * handful, little left unsealed — so the plans are the ones the log will need, not those of its size at upgrade
 * time. Only audit_log is described: the token tables' plans (docs/search.md) stay as they were measured.
 */
async function describeAuditLog(db: Kysely<any>): Promise<void> {
  // Makes sqlite_stat1 (and sqlite_stat4) if the database has none; what it measured is replaced below.
  await sql`analyze audit_log`.execute(db);
  await sql`delete from sqlite_stat1 where tbl = 'audit_log'`.execute(db);
  await sql`delete from sqlite_stat4 where tbl = 'audit_log'`.execute(db);
  await sql`insert into sqlite_stat1 (tbl, idx, stat) values
    ('audit_log', 'audit_log', '1000000 1000000 1 1'),
    ('audit_log', 'audit_log_chain_idx', '1000000 1000000 1'),
    ('audit_log', 'audit_log_entity_idx', '1000000 1000000 100000 10 1'),
    ('audit_log', 'audit_log_unsealed_idx', '100 100 1')`.execute(db);
  // Loads the figures into the planner now, not at the next connection.
  await sql`analyze sqlite_schema`.execute(db);
}

/** The chain holds sealed rows only: the sealer adds each row once it has its number. */
async function createChainIndex(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex("audit_log_chain_idx")
    .on("audit_log")
    .columns(["tenant_id", "seq"])
    .unique()
    .where(sql.ref("seq"), "is not", null)
    .execute();
}

/**
 * What the sealer has still to chain, in id order: ids are UUIDv7, so that is time order (strictly increasing
 * within an instance). Keyed by id and not by time so that SQLite's planner, which has no statistics, cannot
 * prefer the table's own (tenant, time, id) order and walk every sealed row to find the few unsealed ones.
 */
async function createUnsealedIndex(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex("audit_log_unsealed_idx")
    .on("audit_log")
    .columns(["tenant_id", "id"])
    .where(sql.ref("seq"), "is", null)
    .execute();
}

/** Rows about one entity; a search or a list has none. */
async function createEntityIndex(db: Kysely<any>): Promise<void> {
  await db.schema
    .createIndex("audit_log_entity_idx")
    .on("audit_log")
    .columns(["tenant_id", "entity_type", "entity_id", "occurred_at"])
    .where(sql.ref("entity_id"), "is not", null)
    .execute();
}
