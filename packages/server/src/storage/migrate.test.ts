import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, createTestDatabase, type TestDatabase } from "../../test/harness.js";
import { type Store } from "./database.js";
import { migrateThrough, migrateToLatest } from "./migrate.js";

/** Every migration, in order: written once here, so that a new one is one line, and checked against the code's. */
const MIGRATIONS = [
  "0001-initial",
  "0002-tokens",
  "0003-search-index",
  "0004-reactors",
  "0005-reactor-invocations",
  "0006-audit-log",
  "0007-idempotency-keys",
  "0008-token-generation",
  "0009-audit-log-layout",
  "0010-config-generation",
  "0011-webhook-destinations",
  "0012-key-custody",
  "0013-sessions",
  "0014-token-changes",
];

/** The migrations a store that has run through `last` still has to run. */
const after = (last: string): string[] => MIGRATIONS.slice(MIGRATIONS.indexOf(last) + 1);

/** A store left at 0002 with tokens in the old index tables, then brought up to date. */
describe.skipIf(STORE_UNAVAILABLE)("migration 0003-search-index", () => {
  let database: TestDatabase;
  let store: Store;
  const tenant = "0192aaaa-0000-7000-8000-000000000001";

  const token = (
    id: string,
    createdAt: string,
    containers: string[],
    extra: Record<string, unknown> = {},
  ) => ({
    tenant_id: tenant,
    id,
    type: "token",
    ciphertext: "c2VhbGVk",
    key_version: 1,
    fingerprint: null,
    fingerprint_expression: null,
    mask: null,
    search_indexes: "[]",
    metadata: "{}",
    containers: JSON.stringify(containers),
    expires_at: null,
    created_by: null,
    created_at: createdAt,
    modified_by: null,
    modified_at: null,
    ...extra,
  });

  beforeAll(async () => {
    database = await createTestDatabase();
    store = database.open();
    await migrateThrough(store, "0002-tokens");
    // The 0002 tables are gone from the current schema type; this test speaks to them untyped.
    const db = store.db as unknown as Kysely<any>;
    await db
      .insertInto("tenants")
      .values({ id: tenant, name: "t", created_by: null, created_at: "x" })
      .execute();
    await db
      .insertInto("tokens")
      .values([
        token("a", "2024-01-01T00:00:00.000Z", ["/pci/high/", "/pci/"], {
          type: "social_security_number",
          expires_at: "2030-01-01T00:00:00.000Z",
        }),
        token("B", "2024-01-02T00:00:00.000Z", ["/"]),
        token("c", "2024-01-03T00:00:00.000Z", ["/general/high/"]),
      ])
      .execute();
    await db
      .insertInto("token_index_values")
      .values([
        { tenant_id: tenant, blind_value: "h1", token_id: "a" },
        { tenant_id: tenant, blind_value: "h2", token_id: "a" },
      ])
      .execute();
    await db
      .insertInto("token_containers")
      .values([
        { tenant_id: tenant, container: "/pci/high/", token_id: "a" },
        { tenant_id: tenant, container: "/pci/", token_id: "a" },
        { tenant_id: tenant, container: "/", token_id: "B" },
        { tenant_id: tenant, container: "/general/high/", token_id: "c" },
      ])
      .execute();
    await db
      .insertInto("token_metadata")
      .values({ tenant_id: tenant, key: "region", value_folded: "eu", token_id: "c" })
      .execute();
    expect(await migrateToLatest(store)).toEqual(after("0002-tokens"));
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it("carries index values and metadata over with each token's created_at, type and expiry", async () => {
    expect(
      await store.db.selectFrom("token_data_index").selectAll().orderBy("blind_value").execute(),
    ).toEqual([
      {
        tenant_id: tenant,
        blind_value: "h1",
        created_at: "2024-01-01T00:00:00.000Z",
        token_id: "a",
        type: "social_security_number",
        expires_at: "2030-01-01T00:00:00.000Z",
      },
      expect.objectContaining({ blind_value: "h2", token_id: "a" }),
    ]);
    expect(await store.db.selectFrom("token_metadata_index").selectAll().execute()).toEqual([
      {
        tenant_id: tenant,
        key: "region",
        value_folded: "eu",
        created_at: "2024-01-03T00:00:00.000Z",
        token_id: "c",
        type: "token",
        expires_at: null,
      },
    ]);
  });

  it("indexes containers by every path above them, marking the containers themselves", async () => {
    const rows = await store.db
      .selectFrom("token_container_index")
      .select(["token_id", "path", "exact"])
      .orderBy("token_id")
      .orderBy("path")
      .execute();
    expect(rows.map((r) => [r.token_id, r.path, Number(r.exact)])).toEqual([
      ["B", "/", 1],
      ["a", "/pci/", 1],
      ["a", "/pci/high/", 1],
      ["c", "/general/", 0],
      ["c", "/general/high/", 1],
    ]);
  });

  it("drops the old index tables and orders ids by bytes on both engines", async () => {
    const db = store.db as unknown as Kysely<any>;
    await expect(sql`select 1 from token_containers`.execute(db)).rejects.toThrow();
    const ids = await store.db.selectFrom("tokens").select("id").orderBy("id").execute();
    expect(ids.map((r) => r.id)).toEqual(["B", "a", "c"]);
  });
});

/** A store at 0003 with a tenant and its Applications, then brought up to date. */
describe.skipIf(STORE_UNAVAILABLE)("migration 0004-reactors", () => {
  let database: TestDatabase;
  let store: Store;
  const tenant = "0192aaaa-0000-7000-8000-000000000002";
  const application = (id: string) => ({
    id,
    tenant_id: tenant,
    name: id,
    type: "private",
    key_hash: `hash-${id}`,
    permissions: "[]",
    rules: "[]",
    created_by: null,
    created_at: "2024-01-01T00:00:00.000Z",
    modified_by: null,
    modified_at: null,
    expires_at: null,
  });
  const reactor = (id: string, applicationId: string | null) => ({
    id,
    tenant_id: tenant,
    name: id,
    name_folded: id.toLowerCase(),
    code: "module.exports = async () => ({});",
    configuration: "c2VhbGVk",
    key_version: 1,
    application_id: applicationId,
    version: 1,
    created_by: null,
    created_at: "2024-01-02T00:00:00.000Z",
    modified_by: null,
    modified_at: null,
  });

  beforeAll(async () => {
    database = await createTestDatabase();
    store = database.open();
    await migrateThrough(store, "0003-search-index");
    await store.db
      .insertInto("tenants")
      .values({ id: tenant, name: "t", created_by: null, created_at: "x" })
      .execute();
    await store.db
      .insertInto("applications")
      .values([application("app-a"), application("app-b")])
      .execute();
    expect(await migrateToLatest(store)).toEqual(after("0003-search-index"));
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it("keeps a reactor whose Application is deleted, without the reference", async () => {
    await store.db
      .insertInto("reactors")
      .values([reactor("r1", "app-a"), reactor("r2", "app-b"), reactor("r3", null)])
      .execute();
    await store.db.deleteFrom("applications").where("id", "=", "app-a").execute();
    const rows = await store.db
      .selectFrom("reactors")
      .select(["id", "application_id"])
      .orderBy("id")
      .execute();
    expect(rows).toEqual([
      { id: "r1", application_id: null },
      { id: "r2", application_id: "app-b" },
      { id: "r3", application_id: null },
    ]);
  });

  it("refuses a reference to an Application that does not exist", async () => {
    await expect(store.db.insertInto("reactors").values(reactor("r4", "app-z")).execute()).rejects.toThrow();
  });

  it("deletes a tenant's reactors with the tenant", async () => {
    await store.db.deleteFrom("tenants").where("id", "=", tenant).execute();
    expect(await store.db.selectFrom("reactors").selectAll().execute()).toEqual([]);
  });
});

/** A store left at 0008 with sealed and unsealed audit rows, then given 0009's layout. */
describe.skipIf(STORE_UNAVAILABLE)("migration 0009-audit-log-layout", () => {
  let database: TestDatabase;
  let store: Store;
  const tenant = "0192aaaa-0000-7000-8000-000000000004";
  const row = (id: string, occurredAt: string, seq: number | null, entityId: string | null) => ({
    id,
    tenant_id: tenant,
    occurred_at: occurredAt,
    actor_id: "app-a",
    action: entityId === null ? "token.search" : "token.read",
    entity_type: "token",
    entity_id: entityId,
    rule: null,
    details: entityId === null ? '{"query":"type:?"}' : null,
    request_id: `req-${id}`,
    seq,
    hash: seq === null ? null : `hash-${seq}`,
  });
  const rows = [
    row("a1", "2026-01-01T00:00:00.000Z", 1, "tok-1"),
    row("a2", "2026-01-01T00:00:01.000Z", 2, null),
    row("a3", "2026-01-01T00:00:02.000Z", null, "tok-2"),
    row("a4", "2026-01-01T00:00:02.000Z", null, null),
  ];

  beforeAll(async () => {
    database = await createTestDatabase();
    store = database.open();
    await migrateThrough(store, "0008-token-generation");
    await store.db
      .insertInto("tenants")
      .values({ id: tenant, name: "t", created_by: null, created_at: "x" })
      .execute();
    await store.db.insertInto("audit_log").values(rows).execute();
    expect(await migrateToLatest(store)).toEqual(after("0008-token-generation"));
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it("carries every row over unchanged", async () => {
    const after = await store.db.selectFrom("audit_log").selectAll().orderBy("id").execute();
    expect(after.map((r) => ({ ...r, seq: r.seq === null ? null : Number(r.seq) }))).toEqual(rows);
  });

  it("keeps a sealed number unique within the tenant, leaving unsealed rows out of the chain", async () => {
    await expect(
      store.db
        .insertInto("audit_log")
        .values(row("a5", "2026-01-01T00:00:03.000Z", 2, null))
        .execute(),
    ).rejects.toThrow();
    await store.db
      .insertInto("audit_log")
      .values(row("a5", "2026-01-01T00:00:03.000Z", null, null))
      .execute();
    expect(
      await store.db.selectFrom("audit_log").select("id").where("seq", "is", null).orderBy("id").execute(),
    ).toEqual([{ id: "a3" }, { id: "a4" }, { id: "a5" }]);
  });

  it("keys rows by tenant, time and id", async () => {
    await expect(
      store.db
        .insertInto("audit_log")
        .values(row("a1", "2026-01-01T00:00:00.000Z", null, null))
        .execute(),
    ).rejects.toThrow();
  });

  it("deletes a tenant's rows with the tenant", async () => {
    await store.db.deleteFrom("tenants").where("id", "=", tenant).execute();
    expect(await store.db.selectFrom("audit_log").selectAll().execute()).toEqual([]);
  });
});

/** A store left at 0010 with asynchronous invocations, then brought up to date. */
describe.skipIf(STORE_UNAVAILABLE)("migration 0011-webhook-destinations", () => {
  let database: TestDatabase;
  let store: Store;
  const tenant = "0192aaaa-0000-7000-8000-000000000011";
  const invocation = (id: string, callbackUrl: string) => ({
    id,
    tenant_id: tenant,
    reactor_id: "r",
    requested_by: "a",
    callback_url: callbackUrl,
    timeout_ms: 10_000,
    status: "completed",
    run_attempts: 1,
    run_after: "2026-01-01T00:00:00.000Z",
    run_owner: null,
    args: null,
    outcome: "sealed",
    key_version: 1,
    delivery_status: "pending",
    delivery_attempts: 0,
    deliver_after: "2026-01-01T00:00:00.000Z",
    delivery_owner: null,
    created_at: "2026-01-01T00:00:00.000Z",
    started_at: null,
    finished_at: null,
    delivered_at: null,
  });

  beforeAll(async () => {
    database = await createTestDatabase();
    store = database.open();
    await migrateThrough(store, "0010-config-generation");
    await store.db
      .insertInto("tenants")
      .values({ id: tenant, name: "t", created_by: null, created_at: "x" })
      .execute();
    await store.db
      .insertInto("reactor_invocations")
      .values([
        invocation("i1", "https://Hooks.Example.com/a?x=1"),
        invocation("i2", "https://hooks.example.com:443/b"),
        invocation("i3", "http://10.0.0.7:8080/c"),
        invocation("i4", "http://[::1]/d"),
      ])
      .execute();
    expect(await migrateToLatest(store)).toEqual(after("0010-config-generation"));
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  it("gives every invocation its destination: scheme, host and port, the default port spelt out", async () => {
    const rows = await store.db
      .selectFrom("reactor_invocations")
      .select(["id", "destination"])
      .orderBy("id")
      .execute();
    expect(rows).toEqual([
      { id: "i1", destination: "https://hooks.example.com:443" },
      { id: "i2", destination: "https://hooks.example.com:443" },
      { id: "i3", destination: "http://10.0.0.7:8080" },
      { id: "i4", destination: "http://[::1]:80" },
    ]);
    expect(await store.db.selectFrom("webhook_destinations").selectAll().execute()).toEqual([]);
  });
});

describe.skipIf(STORE_UNAVAILABLE)("a fresh store", () => {
  it("runs every migration, in order, once", async () => {
    const database = await createTestDatabase();
    const store = database.open();
    try {
      expect(await migrateToLatest(store)).toEqual(MIGRATIONS);
      expect(await migrateToLatest(store)).toEqual([]);
    } finally {
      await store.close();
      await database.drop();
    }
  });
});
