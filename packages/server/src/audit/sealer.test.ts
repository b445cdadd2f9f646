import { randomBytes } from "node:crypto";
import { CompiledQuery } from "kysely";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Store } from "../storage/database.js";
import { migrateToLatest } from "../storage/migrate.js";
import { STORE_UNAVAILABLE, createTestDatabase, type TestDatabase } from "../../test/harness.js";
import { sealAuditLog } from "./sealer.js";

const ENTRIES = 1_700;

/** A long unsealed tail, as a store restored or seeded in bulk has: the sealer chains it in batches of 500. */
describe.skipIf(STORE_UNAVAILABLE)("sealing a long unsealed tail", () => {
  let database: TestDatabase;
  let store: Store;
  const key = randomBytes(32);

  beforeEach(async () => {
    database = await createTestDatabase();
    store = database.open();
    await migrateToLatest(store);
    await store.db
      .insertInto("tenants")
      .values({ id: "tenant-1", name: "t", created_at: "2020-01-01T00:00:00.000Z", shredded_at: null })
      .execute();
    const ids = Array.from({ length: ENTRIES }, (_, i) => String(i + 1).padStart(36, "0"));
    for (let i = 0; i < ENTRIES; i += 100) {
      await store.db
        .insertInto("audit_log")
        .values(
          ids.slice(i, i + 100).map((id) => ({
            id,
            tenant_id: "tenant-1",
            occurred_at: "2020-01-01T00:00:00.000Z",
            actor_id: null,
            action: "token.read",
            entity_type: "token",
            entity_id: null,
            rule: null,
            details: null,
            request_id: null,
          })),
        )
        .execute();
    }
  });
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });

  it("lets the event loop turn between batches, and chains every entry once, in order", async () => {
    let finished = false;
    const sealing = sealAuditLog(store, { ensure: async () => key }).then((sealed) => {
      finished = true;
      return sealed;
    });
    // A timer runs only when the event loop turns. On SQLite the driver answers synchronously: with no turn
    // between batches, the whole tail was chained before any request (or this timer) got a look in.
    const turnedWhileSealing = await new Promise<boolean>((resolve) =>
      setTimeout(() => resolve(!finished), 0),
    );
    expect(turnedWhileSealing).toBe(true);
    expect(await sealing).toBe(ENTRIES);
    const { rows } = await store.db.executeQuery<{ id: string; seq: number | string }>(
      CompiledQuery.raw("select id, seq from audit_log order by id"),
    );
    expect(rows.map((row) => Number(row.seq))).toEqual(Array.from({ length: ENTRIES }, (_, i) => i + 1));
    expect(await sealAuditLog(store, { ensure: async () => key })).toBe(0);
  });
});
