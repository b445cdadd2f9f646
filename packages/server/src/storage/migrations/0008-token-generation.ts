import { SqliteAdapter, sql, type Kysely } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// SQLite only. Search totals are cached while the tokens are unchanged (tokens/store.ts). They used to be keyed by
// SQLite's data_version, which any commit moves — and since every read commits an audit entry (0006), every
// search recounted. This counter moves only when a token row is written, by this process or any other, in the
// same transaction as the write. PostgreSQL keeps no such cache (a single hot row would serialise every token
// write across instances), so nothing is created there.
export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
  await sql`create table token_generation (id integer primary key check (id = 1), value integer not null)`.execute(
    db,
  );
  await sql`insert into token_generation (id, value) values (1, 0)`.execute(db);
  for (const event of ["insert", "update", "delete"]) {
    await sql`create trigger ${sql.raw(`tokens_generation_${event}`)} after ${sql.raw(event)} on tokens
      begin update token_generation set value = value + 1 where id = 1; end`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) return;
  for (const event of ["insert", "update", "delete"]) {
    await sql`drop trigger if exists ${sql.raw(`tokens_generation_${event}`)}`.execute(db);
  }
  await sql`drop table token_generation`.execute(db);
}
