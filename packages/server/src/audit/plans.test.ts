import BetterSqlite3 from "better-sqlite3";
import { Kysely, SqliteDialect, type CompiledQuery } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig } from "../config.js";
import { openStore } from "../storage/open.js";
import { migrateToLatest } from "../storage/migrate.js";
import type { Database } from "../storage/schema.js";
import { STORE, TEST_MASTER_KEY, createTestDatabase, type TestDatabase } from "../../test/harness.js";
import { auditStore } from "./store.js";

const TENANT = "tenant-1";

/**
 * Every read writes an audit row and every GET /logs reads them, so each of the audit log's statements must find
 * its rows through an index and in the order asked for, at any size of the log: SQLite plans them from the
 * figures migration 0009 gives it, and this holds those plans.
 */
describe.skipIf(STORE !== "sqlite")("audit log plans on SQLite", () => {
  let database: TestDatabase;
  let sqlite: BetterSqlite3.Database;
  let db: Kysely<Database>;
  let statements: CompiledQuery[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    const config = loadConfig({ ...database.env, TESSERA_MASTER_KEY: TEST_MASTER_KEY }).database;
    const store = openStore(config);
    await migrateToLatest(store);
    await store.close();
    sqlite = new BetterSqlite3(database.env.TESSERA_DATABASE_URL!.replace(/^sqlite:/, ""));
    db = new Kysely<Database>({
      dialect: new SqliteDialect({ database: sqlite }),
      log: (event) => {
        if (event.level === "query") statements.push(event.query);
      },
    });
  });
  afterAll(async () => {
    await db?.destroy();
    await database?.drop();
  });

  /** The plan of each statement `run` sends, one string per statement. */
  async function plans(run: (audit: ReturnType<typeof auditStore>) => Promise<unknown>): Promise<string[]> {
    statements = [];
    await run(auditStore(db));
    return statements.map((statement) =>
      sqlite
        .prepare(`explain query plan ${statement.sql}`)
        .all(...statement.parameters)
        .map((row) => (row as { detail: string }).detail)
        .join("\n"),
    );
  }

  const page = { offset: 0, limit: 20 };

  it.each([
    ["one token's entries", { entityType: "token", entityId: "t-1", ...page }, "audit_log_entity_idx"],
    [
      "one token's entries in a date range",
      { entityType: "token", entityId: "t-1", from: "2026-01-01", to: "2026-02-01", ...page },
      "audit_log_entity_idx",
    ],
    ["the newest entries", page, "USING PRIMARY KEY (tenant_id=?)"],
    [
      "a date range",
      { from: "2026-01-01", to: "2026-02-01", action: "token.read", ...page },
      "USING PRIMARY KEY (tenant_id=? AND occurred_at>? AND occurred_at<?)",
    ],
  ])("GET /logs for %s: %s, newest first without sorting", async (_name, filter, index) => {
    const [list, count] = await plans((audit) => audit.list(TENANT, filter));
    expect(list, list).toContain(index);
    expect(list, list).not.toMatch(/TEMP B-TREE/);
    expect(count, count).toContain(index);
  });

  it("finds what the sealer has to chain, and the chain's head, through their partial indexes", async () => {
    const [tenants] = await plans((audit) => audit.tenantsWithUnsealed());
    expect(tenants).toContain("audit_log_unsealed_idx");
    const [unsealed] = await plans((audit) => audit.unsealed(TENANT, 500));
    expect(unsealed).toBe("SEARCH audit_log USING INDEX audit_log_unsealed_idx (tenant_id=?)");
    const [head] = await plans((audit) => audit.head(TENANT));
    expect(head).toContain("USING INDEX audit_log_chain_idx (tenant_id=? AND seq>?)");
    const [after] = await plans((audit) => audit.sealedAfter(TENANT, 10, 500));
    expect(after).toContain("USING INDEX audit_log_chain_idx (tenant_id=? AND seq>?)");
  });

  it("seals a row by its whole key", async () => {
    const record = {
      id: "r-1",
      tenantId: TENANT,
      occurredAt: "2026-01-01T00:00:00.000Z",
      actorId: null,
      action: "token.read",
      entityType: "token",
      entityId: "t-1",
      rule: null,
      details: null,
      requestId: null,
      seq: null,
      hash: null,
    };
    const [seal] = await plans((audit) => audit.seal([{ record, seq: 1, hash: "h" }]));
    expect(seal).toBe("SEARCH audit_log USING PRIMARY KEY (tenant_id=? AND occurred_at=? AND id=?)");
  });
});
