import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE, createTestDatabase, type TestDatabase } from "../../test/harness.js";
import type { Store } from "./database.js";
import { migrateToLatest } from "./migrate.js";

/**
 * Migration 0014 (issue 23): the tenant's token generation on PostgreSQL. Every committed token write grows it, a
 * statement writing many tokens grows it once, and two writes on connections in different slots do not wait for
 * each other (one counter row per tenant would make them).
 */
describe.skipIf(STORE !== "postgres")("token generation on PostgreSQL", () => {
  let database: TestDatabase;
  let store: Store;
  const clients: pg.Client[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    store = database.open();
    await migrateToLatest(store);
    await sql(`insert into tenants (id, name, created_at) values ('t1', 't1', 'x'), ('t2', 't2', 'x')`);
  });
  afterAll(async () => {
    for (const client of clients) await client.end();
    await store?.close();
    await database?.drop();
  });

  async function sql(text: string, client?: pg.Client) {
    if (client !== undefined) return client.query(text);
    const connection = await connect();
    try {
      return await connection.query(text);
    } finally {
      await connection.end();
      clients.splice(clients.indexOf(connection), 1);
    }
  }
  async function connect() {
    const client = new pg.Client({ connectionString: database.env.TESSERA_DATABASE_URL });
    await client.connect();
    clients.push(client);
    return client;
  }
  const insert = (tenant: string, id: string) =>
    `insert into tokens (tenant_id, id, type, ciphertext, key_version, search_indexes, metadata, containers, created_at)
     values ('${tenant}', '${id}', 'token', 'c', 1, '[]', '{}', '[]', '2026-01-01')`;
  const generation = async (tenant: string) =>
    Number(
      (await sql(`select coalesce(sum(value), 0) as g from token_changes where tenant_id = '${tenant}'`))
        .rows[0].g,
    );

  it("grows with every committed token write, once per statement and tenant", async () => {
    const start = await generation("t1");
    await sql(insert("t1", "a"));
    expect(await generation("t1")).toBe(start + 1);
    await sql(`${insert("t1", "b")}, ('t1', 'c', 'token', 'c', 1, '[]', '{}', '[]', '2026-01-02')`);
    expect(await generation("t1")).toBe(start + 2);
    await sql(`update tokens set metadata = '{"k":"v"}' where tenant_id = 't1'`);
    expect(await generation("t1")).toBe(start + 3);
    // Another tenant's writes leave this tenant's generation alone.
    const other = await generation("t2");
    await sql(insert("t2", "a"));
    expect(await generation("t1")).toBe(start + 3);
    expect(await generation("t2")).toBe(other + 1);
    await sql(`delete from tokens where id in ('a', 'b')`);
    expect(await generation("t1")).toBe(start + 4);
    expect(await generation("t2")).toBe(other + 2);
    // A statement that writes no token changes nothing; a rolled-back write neither.
    await sql(`delete from tokens where id = 'none'`);
    await sql(`begin; ${insert("t1", "d")}; rollback`);
    expect(await generation("t1")).toBe(start + 4);
  });

  it("lets writes of one tenant on connections in different slots commit without waiting for each other", async () => {
    const slotOf = async (client: pg.Client) =>
      Number((await client.query("select pg_backend_pid() % 16 as slot")).rows[0].slot);
    const first = await connect();
    let second = await connect();
    while ((await slotOf(second)) === (await slotOf(first))) second = await connect();
    await first.query("begin");
    await first.query(insert("t1", "slow"));
    // Held open: with one counter row per tenant the second insert would wait for it, and time out here.
    await second.query("set lock_timeout = '2s'");
    await second.query(insert("t1", "fast"));
    const before = await generation("t1");
    await first.query("commit");
    expect(await generation("t1")).toBe(before + 1);
  });
});
