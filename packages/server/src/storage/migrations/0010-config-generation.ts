import { SqliteAdapter, sql, type Kysely } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// SQLite only. Every request looks up its API key's Application, and every react its reactor. Since every read
// commits an audit entry (0006), and any commit makes SQLite drop the reading connection's page cache, each of
// those lookups reads its B-tree pages again. They are kept in memory instead (storage/versioned-cache.ts) for as
// long as this counter, which moves whenever an Application or a reactor row is written — by this process or any
// other (the CLI, a second server on the same file), in the write's own transaction — stays the same. Reading one
// row of a one-page table costs less than either lookup, and the answer is exact: a revoked key is refused by the
// very next request. Foreign-key cascades (a tenant deleted) fire these triggers too. PostgreSQL reads the rows
// each time, so nothing is created there.
const TABLES = ["applications", "reactors"] as const;
const EVENTS = ["insert", "update", "delete"] as const;

export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
  await sql`create table config_generation (id integer primary key check (id = 1), value integer not null)`.execute(
    db,
  );
  await sql`insert into config_generation (id, value) values (1, 0)`.execute(db);
  for (const table of TABLES) {
    for (const event of EVENTS) {
      await sql`create trigger ${sql.raw(`${table}_generation_${event}`)} after ${sql.raw(event)} on ${sql.raw(table)}
        begin update config_generation set value = value + 1 where id = 1; end`.execute(db);
    }
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
  for (const table of TABLES) {
    for (const event of EVENTS) {
      await sql`drop trigger if exists ${sql.raw(`${table}_generation_${event}`)}`.execute(db);
    }
  }
  await sql`drop table config_generation`.execute(db);
}
