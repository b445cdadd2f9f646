import { existsSync, readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  expectProblem,
  startTestServer,
  type TestServer,
} from "../../test/harness.js";

const CARD = "4242424242424242";

/** The store's files as bytes (SQLite): the database and its WAL. */
function storeFiles(server: TestServer): Buffer[] {
  const file = server.database.env.TESSERA_DATABASE_URL!.replace(/^sqlite:/, "");
  return [file, `${file}-wal`].filter((each) => existsSync(each)).map((each) => readFileSync(each));
}

/** Whether any file holds the wrapped key, as stored (base64 text) or decoded. */
function holds(files: readonly Buffer[], wrapped: string): boolean {
  const decoded = Buffer.from(wrapped, "base64");
  return files.some((bytes) => bytes.includes(wrapped, 0, "latin1") || bytes.includes(decoded));
}

describe.skipIf(STORE_UNAVAILABLE)(`DELETE /tenants/{id}: crypto-shredding (${STORE})`, () => {
  let server: TestServer;
  let acme: { id: string; adminKey: string; appKey: string; tokens: string[] };
  let bootstrapTenant: string;

  beforeAll(async () => {
    server = await startTestServer();
    bootstrapTenant = (await server.request("GET", "/tenants/self")).body.id;
    const created = await server.request("POST", "/tenants", { body: { name: "acme" } });
    expect(created.status, created.text).toBe(201);
    const adminKey: string = created.body.application.key;
    const app = await server.request("POST", "/applications", {
      key: adminKey,
      body: {
        name: "backend",
        type: "private",
        rules: [
          { priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read"] },
        ],
      },
    });
    expect(app.status, app.text).toBe(201);
    const tokens: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const token = await server.request("POST", "/tokens", {
        key: app.body.key,
        body: { data: CARD, metadata: { customer: `c-${i}` } },
      });
      expect(token.status, token.text).toBe(201);
      tokens.push(token.body.id);
    }
    acme = { id: created.body.id, adminKey, appKey: app.body.key, tokens };
  });
  afterAll(async () => {
    await server?.close();
  });

  it("is refused to anyone but the bootstrap tenant, for the bootstrap tenant itself, and for no such tenant", async () => {
    expectProblem(await server.request("DELETE", `/tenants/${acme.id}`, { key: acme.adminKey }), 403, {
      code: "forbidden",
    });
    expectProblem(await server.request("DELETE", `/tenants/${bootstrapTenant}`), 409, {
      code: "conflict",
      detail: /bootstrap tenant cannot be shredded/,
    });
    expectProblem(await server.request("DELETE", "/tenants/no-such-tenant"), 404, { code: "not-found" });
    // Nothing was touched.
    const read = await server.request("GET", `/tokens/${acme.tokens[0]}`, { key: acme.appKey });
    expect(read.status, read.text).toBe(200);
    expect(read.body.data).toBe(CARD);
  });

  it("destroys the tenant's keys, leaves none in the store's files, and nothing of it reads", async () => {
    const store = server.database.open();
    let wrapped: string[];
    try {
      wrapped = (
        await store.db
          .selectFrom("tenant_keys")
          .select("wrapped_key")
          .where("tenant_id", "=", acme.id)
          .execute()
      ).map((row) => row.wrapped_key);
    } finally {
      await store.close();
    }
    expect(wrapped).toHaveLength(5);
    // The search can fail: before, the files hold the keys.
    if (STORE === "sqlite") expect(wrapped.some((key) => holds(storeFiles(server), key))).toBe(true);

    const shredded = await server.request("DELETE", `/tenants/${acme.id}`);
    expect(shredded.status, shredded.text).toBe(200);
    expect(shredded.body).toEqual({
      id: acme.id,
      shredded_at: expect.any(String),
      destroyed: {
        tenant_keys: 5,
        tokens: 3,
        reactors: 0,
        reactor_invocations: 0,
        idempotency_keys: 0,
        applications: 2,
      },
      files_scrubbed: STORE === "sqlite",
    });

    if (STORE === "sqlite") {
      const files = storeFiles(server);
      for (const key of wrapped) expect(holds(files, key), `wrapped key ${key.slice(0, 12)}…`).toBe(false);
    }

    // Nothing of it reads through the API: its keys no longer authenticate, and it is no longer there to shred.
    for (const key of [acme.appKey, acme.adminKey]) {
      expectProblem(await server.request("GET", `/tokens/${acme.tokens[0]}`, { key }), 401, {
        code: "unauthenticated",
      });
    }
    expectProblem(await server.request("DELETE", `/tenants/${acme.id}`), 404, { code: "not-found" });

    // What remains: the tenant's id and its audit log; the shredding in the bootstrap tenant's log.
    const after = server.database.open();
    try {
      expect(
        await after.db
          .selectFrom("tenant_keys")
          .select("tenant_id")
          .where("tenant_id", "=", acme.id)
          .execute(),
      ).toEqual([]);
      const tenant = await after.db
        .selectFrom("tenants")
        .select(["id", "shredded_at"])
        .where("id", "=", acme.id)
        .executeTakeFirstOrThrow();
      expect(tenant.shredded_at).toBe(shredded.body.shredded_at);
      expect(
        (await after.db.selectFrom("audit_log").select("id").where("tenant_id", "=", acme.id).execute())
          .length,
      ).toBeGreaterThan(0);
      const entry = await after.db
        .selectFrom("audit_log")
        .select(["tenant_id", "entity_id", "details"])
        .where("action", "=", "tenant.shred")
        .executeTakeFirstOrThrow();
      expect(entry.tenant_id).toBe(bootstrapTenant);
      expect(entry.entity_id).toBe(acme.id);
      expect(JSON.parse(entry.details!)).toEqual(shredded.body.destroyed);
    } finally {
      await after.close();
    }
    // The other tenants are untouched, and the server keeps serving them.
    expect((await server.request("GET", "/tenants/self")).status).toBe(200);
  });
});
