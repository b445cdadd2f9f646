import { PostgresAdapter, sql, type Kysely } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// PostgreSQL only (issue 23): what 0008 is for SQLite. Search totals and a tenant's top-level containers are cached
// while the tenant's tokens are unchanged (search/run.ts). One counter row per tenant would make every token write
// of the tenant wait for the one before it to commit, across every instance; so each tenant has up to SLOTS rows,
// and a write moves the slot of the backend it runs on (pg_backend_pid() % SLOTS). Two writes on different
// backends touch different rows unless their pids share a slot. The tenant's generation is the sum of its slots:
// each committed token write adds at least one, in its own transaction, so two reads of the sum that agree saw the
// same committed tokens. Statement-level triggers with transition tables: a statement writing many tokens (a
// bulk delete of expired tokens, a multi-row insert) moves each tenant's slot once, not once per row.
const SLOTS = 16;

export async function up(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  await sql`create table token_changes (
    tenant_id text not null,
    slot integer not null,
    value bigint not null,
    primary key (tenant_id, slot)
  )`.execute(db);
  // Tenants in one order, so that two statements spanning several tenants take their rows in the same order.
  await sql`create function token_changes_bump() returns trigger language plpgsql as $$
    begin
      insert into token_changes as c (tenant_id, slot, value)
        select tenant_id, pg_backend_pid() % ${sql.lit(SLOTS)}, 1
        from (select distinct tenant_id from changed) as t order by tenant_id
        on conflict (tenant_id, slot) do update set value = c.value + 1;
      return null;
    end
  $$`.execute(db);
  for (const [event, table] of [
    ["insert", "new"],
    ["update", "new"],
    ["delete", "old"],
  ] as const) {
    await sql`create trigger ${sql.raw(`tokens_changes_${event}`)} after ${sql.raw(event)} on tokens
      referencing ${sql.raw(table)} table as changed
      for each statement execute function token_changes_bump()`.execute(db);
  }
}

export async function down(db: Kysely<any>): Promise<void> {
  if (!(db.getExecutor().adapter instanceof PostgresAdapter)) return;
  for (const event of ["insert", "update", "delete"]) {
    await sql`drop trigger if exists ${sql.raw(`tokens_changes_${event}`)} on tokens`.execute(db);
  }
  await sql`drop function if exists token_changes_bump()`.execute(db);
  await sql`drop table token_changes`.execute(db);
}
