import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  TEST_MASTER_KEY,
  expectProblem,
  startTestServer,
  type TestServer,
} from "../../test/harness.js";
import { createKeyring } from "../crypto/keyring.js";
import { type Store } from "../storage/database.js";
import { createTenantKeys } from "../keys/tenant-keys.js";
import { verifyAuditLog } from "./verify.js";

const SECRET_VALUE = "sk_live_audit_must_not_see_this";

describe.skipIf(STORE_UNAVAILABLE)("the audit log", () => {
  let server: TestServer;
  let store: Store;
  let tenantId: string;
  let adminId: string;
  const keyring = createKeyring(Buffer.from(TEST_MASTER_KEY, "base64"));

  const logs = async (query = "", key?: string) => {
    const response = await server.request("GET", `/logs${query}`, key === undefined ? {} : { key });
    expect(response.status, response.text).toBe(200);
    return response.body as { pagination: { total_items: number }; data: any[] };
  };

  /** Waits until the sealer has chained every entry (it runs every poll interval). */
  async function sealed(): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const unsealed = await store.db
        .selectFrom("audit_log")
        .select((eb) => eb.fn.countAll().as("n"))
        .where("seq", "is", null)
        .executeTakeFirstOrThrow();
      if (Number(unsealed.n) === 0) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error("the audit log was not sealed");
  }

  const verify = () =>
    verifyAuditLog(store, createTenantKeys({ store, keyring, clock: server.clock }), server.clock, [
      tenantId,
    ]).then(([report]) => report!);

  beforeAll(async () => {
    server = await startTestServer({ TESSERA_JOB_POLL_MS: "50" });
    store = server.database.open();
    const self = await server.request("GET", "/applications/key");
    tenantId = self.body.tenant_id;
    adminId = self.body.id;
  });
  afterAll(async () => {
    await store?.close();
    await server?.close();
  });

  it("records every Application, reactor, tenant and secret change with its actor, never a key or a configuration value", async () => {
    const created = await server.request("POST", "/applications", {
      body: {
        name: "backend",
        type: "private",
        rules: [{ priority: 1, container: "/pci/", transform: "mask", permissions: ["token:read"] }],
      },
    });
    const appId = created.body.id as string;
    await server.request("PUT", `/applications/${appId}`, {
      body: { name: "backend", permissions: ["token:read", "token:create"] },
    });
    await server.request("POST", `/applications/${appId}/regenerate`);
    await server.request("DELETE", `/applications/${appId}`);
    const reactor = await server.request("POST", "/reactors", {
      body: {
        name: "r",
        code: "module.exports = async () => ({});",
        configuration: { API_KEY: SECRET_VALUE },
      },
    });
    const reactorId = reactor.body.id as string;
    await server.request("PATCH", `/reactors/${reactorId}`, {
      rawBody: JSON.stringify({ name: "renamed" }),
      contentType: "application/merge-patch+json",
    });
    await server.request("DELETE", `/reactors/${reactorId}`);
    const tenant = await server.request("POST", "/tenants", { body: { name: "second" } });
    await server.request("POST", "/webhooks/secret/rotate");

    const { data } = await logs("?size=100");
    const mine = data.filter((entry) => entry.actor_id === adminId).reverse();
    expect(mine.map((entry) => [entry.action, entry.entity_type, entry.entity_id])).toEqual([
      ["application.create", "application", appId],
      ["application.update", "application", appId],
      ["application.regenerate_key", "application", appId],
      ["application.delete", "application", appId],
      ["reactor.create", "reactor", reactorId],
      ["reactor.update", "reactor", reactorId],
      ["reactor.delete", "reactor", reactorId],
      ["tenant.create", "tenant", tenant.body.id],
      ["webhook.rotate_secret", "webhook_secret", undefined],
    ]);
    expect(mine[0]).toEqual({
      id: expect.any(String),
      tenant_id: tenantId,
      actor_id: adminId,
      action: "application.create",
      entity_type: "application",
      entity_id: appId,
      details: {
        type: "private",
        permissions: [],
        rules: [{ container: "/pci/", priority: 1, transform: "mask", permissions: ["token:read"] }],
      },
      request_id: expect.any(String),
      created_at: expect.any(String),
      ...(mine[0].sequence !== undefined && { sequence: mine[0].sequence }),
    });
    expect(mine[4].details).toEqual({ name: "r", configuration_names: ["API_KEY"], application_id: null });
    const everything = JSON.stringify(data);
    expect(everything).not.toContain(SECRET_VALUE);
    expect(everything).not.toContain(created.body.key);
    expect(everything).not.toMatch(/key_(prv|pub|mgt)_/);

    // The new tenant's own log starts with its creation; the first tenant's entries are not in it.
    const theirs = await logs("", tenant.body.application.key);
    expect(theirs.data.map((entry: any) => [entry.action, entry.actor_id])).toEqual([
      ["tenant.create", adminId],
    ]);
  });

  it("records token writes, reads (with the rule that decided), lists, searches without their values, detokenizations and reactor uses", async () => {
    const ssn = "123-45-6789";
    const backend = await server.request("POST", "/applications", {
      body: {
        name: "token user",
        type: "private",
        rules: [
          {
            priority: 1,
            container: "/pii/",
            transform: "mask",
            permissions: [
              "token:create",
              "token:read",
              "token:update",
              "token:delete",
              "token:search",
              "token:use",
            ],
          },
        ],
      },
    });
    const key = backend.body.key as string;
    const actor = backend.body.id as string;
    const token = await server.request("POST", "/tokens", {
      key,
      body: { type: "social_security_number", data: ssn, containers: ["/pii/"] },
    });
    const id = token.body.id as string;
    await server.request("GET", `/tokens/${id}`, { key });
    await server.request("GET", "/tokens", { key });
    await server.request("POST", "/tokens/search", {
      key,
      body: { query: `data:"${ssn}" AND type:social_security_number` },
    });
    const detokenized = await server.request("POST", "/detokenize", { key, body: { ssn: `{{ ${id} }}` } });
    expect(detokenized.status, detokenized.text).toBe(200);
    await server.request("PATCH", `/tokens/${id}`, {
      key,
      rawBody: JSON.stringify({ metadata: { region: "eu" } }),
      contentType: "application/merge-patch+json",
    });
    const reactor = await server.request("POST", "/reactors", {
      body: {
        configuration: {},
        name: "echo",
        code: "module.exports = async ({ args }) => ({ raw: { length: args.n.length } });",
      },
    });
    const reacted = await server.request("POST", `/reactors/${reactor.body.id}/react`, {
      key,
      body: { args: { n: `{{ ${id} }}` } },
    });
    expect(reacted.status, reacted.text).toBe(200);
    await server.request("DELETE", `/tokens/${id}`, { key });

    const { data } = await logs(`?actor_id=${actor}&size=100`);
    const rule = { container: "/pii/", priority: 1, transform: "mask" };
    const shown = [{ id, transform: "mask", container: "/pii/" }];
    expect(
      data.reverse().map(({ action, entity_type, entity_id, rule, details }) => ({
        action,
        entity_type,
        entity_id,
        rule,
        details,
      })),
    ).toEqual([
      {
        action: "token.create",
        entity_type: "token",
        entity_id: id,
        rule,
        details: { type: "social_security_number", containers: ["/pii/"] },
      },
      { action: "token.read", entity_type: "token", entity_id: id, rule, details: undefined },
      {
        action: "token.list",
        entity_type: "token",
        entity_id: undefined,
        rule: undefined,
        details: { page: 1, size: 20, total: 1, tokens: shown },
      },
      {
        action: "token.search",
        entity_type: "token",
        entity_id: undefined,
        rule: undefined,
        details: { query: "data:? AND type:?", page: 1, size: 20, total: 1, tokens: shown },
      },
      {
        action: "token.detokenize",
        entity_type: "token",
        entity_id: undefined,
        rule: undefined,
        details: { tokens: shown },
      },
      {
        action: "token.update",
        entity_type: "token",
        entity_id: id,
        rule,
        details: { fields: ["metadata"] },
      },
      {
        action: "reactor.react",
        entity_type: "reactor",
        entity_id: reactor.body.id,
        rule: undefined,
        details: { tokens: shown },
      },
      { action: "token.delete", entity_type: "token", entity_id: id, rule, details: undefined },
    ]);
    // Ids are random hex and can hold "6789" by chance (CI drew a reactor id that did): they are not the value.
    const text = JSON.stringify(data).replace(
      /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g,
      "<id>",
    );
    expect(text).not.toContain(ssn);
    expect(text).not.toContain("6789");
    expect(text).not.toContain(key);
  });

  it("filters by entity, actor, action and time, newest first, and pages", async () => {
    const a = await server.request("POST", "/applications", {
      body: { name: "a", type: "private", permissions: ["token:read"] },
    });
    await server.request("PUT", `/applications/${a.body.id}`, {
      body: { name: "a2", permissions: ["token:read"] },
    });
    const byEntity = await logs(`?entity_type=application&entity_id=${a.body.id}`);
    expect(byEntity.data.map((entry) => entry.action)).toEqual(["application.update", "application.create"]);
    expect(byEntity.pagination.total_items).toBe(2);

    const byAction = await logs("?action=application.update&size=1");
    expect(byAction.data).toHaveLength(1);
    expect(byAction.data[0].entity_id).toBe(a.body.id);
    expect(byAction.pagination.total_items).toBeGreaterThanOrEqual(2);

    expect((await logs(`?actor_id=${adminId}&size=1`)).data[0].actor_id).toBe(adminId);
    expect((await logs("?actor_id=nobody")).data).toEqual([]);

    const now = server.clock.now().getTime();
    const within = await logs(
      `?start_date=${new Date(now - 1).toISOString()}&end_date=${new Date(now + 1).toISOString()}`,
    );
    expect(within.pagination.total_items).toBeGreaterThan(0);
    expect((await logs(`?start_date=${new Date(now + 1).toISOString()}`)).data).toEqual([]);

    expectProblem(await server.request("GET", "/logs?start_date=yesterday"), 400, {
      errors: { start_date: ["must be a valid date-time"] },
    });
    expectProblem(
      await server.request(
        "GET",
        `/logs?start_date=${new Date(now).toISOString()}&end_date=${new Date(now).toISOString()}`,
      ),
      400,
      { errors: { end_date: ["must be after start_date"] } },
    );
    expectProblem(await server.request("GET", "/logs?action=token.eat"), 400);
    expectProblem(await server.request("GET", "/logs?size=101"), 400);
  });

  it("is readable only with log:read", async () => {
    const reader = await server.request("POST", "/applications", {
      body: { name: "auditor", type: "management", permissions: ["log:read"] },
    });
    expect((await server.request("GET", "/logs", { key: reader.body.key })).status).toBe(200);
    const other = await server.request("POST", "/applications", {
      body: { name: "x", type: "management", permissions: ["application:read"] },
    });
    expectProblem(await server.request("GET", "/logs", { key: other.body.key }), 403, { detail: /log:read/ });
    expectProblem(await server.request("GET", "/logs", { key: null }), 401);
  });

  it("seals entries into a chain that verifies, and shows where it was tampered with", async () => {
    await sealed();
    const intact = await verify();
    expect(intact.problems).toEqual([]);
    expect(intact.rows).toBeGreaterThan(10);
    expect(intact.head?.seq).toBe(intact.rows);
    const shown = await logs("?size=1");
    expect(shown.data[0].sequence).toBe(intact.head?.seq);

    const row = (seq: number) =>
      store.db
        .selectFrom("audit_log")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .where("seq", "=", seq)
        .executeTakeFirstOrThrow();
    // Changed: someone rewrites who did it.
    const third = await row(3);
    await store.db
      .updateTable("audit_log")
      .set({ actor_id: "someone-else" })
      .where("id", "=", third.id)
      .execute();
    expect((await verify()).problems).toEqual([
      `row 3 (${third.id}) does not match its link: changed, inserted or re-linked`,
    ]);
    await store.db
      .updateTable("audit_log")
      .set({ actor_id: third.actor_id })
      .where("id", "=", third.id)
      .execute();
    expect((await verify()).problems).toEqual([]);

    // Removed: an entry disappears.
    const fifth = await row(5);
    await store.db.deleteFrom("audit_log").where("id", "=", fifth.id).execute();
    expect((await verify()).problems).toEqual(["rows 5–5 are missing"]);
    await store.db.insertInto("audit_log").values(fifth).execute();

    // Forged: a new entry with a plausible link (a plain hash) in place of an old one.
    const seventh = await row(7);
    await store.db
      .updateTable("audit_log")
      .set({ action: "application.delete", hash: "AAAA" })
      .where("id", "=", seventh.id)
      .execute();
    expect((await verify()).problems).toHaveLength(2);
    await store.db
      .updateTable("audit_log")
      .set({ action: seventh.action, hash: seventh.hash })
      .where("id", "=", seventh.id)
      .execute();
    expect((await verify()).problems).toEqual([]);
  });

  it("fails closed on a read: a token read whose entry cannot be written is not answered (503, no data)", async () => {
    // The read's entry goes alone (one statement, its own transaction on PostgreSQL): refused, the read fails.
    const reader = await server.request("POST", "/applications", {
      body: {
        name: "refused reader",
        type: "private",
        rules: [
          {
            priority: 1,
            container: "/pci/",
            transform: "reveal",
            permissions: ["token:create", "token:read"],
          },
        ],
      },
    });
    const key = reader.body.key as string;
    const created = await server.request("POST", "/tokens", {
      key,
      body: { type: "card_number", data: "4242424242424242" },
    });
    expect(created.status, created.text).toBe(201);
    const id = created.body.id as string;
    if (STORE === "sqlite") {
      await sql`create trigger refuse_read before insert on audit_log when new.action = 'token.read' begin select raise(abort, 'audit disk full'); end`.execute(
        store.db,
      );
    } else {
      await sql`create function refuse_read() returns trigger language plpgsql as $$ begin if new.action = 'token.read' then raise exception 'audit disk full'; end if; return new; end $$`.execute(
        store.db,
      );
      await sql`create trigger refuse_read before insert on audit_log for each row execute function refuse_read()`.execute(
        store.db,
      );
    }
    try {
      const refused = await server.request("GET", `/tokens/${id}`, { key });
      expectProblem(refused, 503, { code: "unavailable", detail: /audit log could not be written/ });
      expect(refused.text).not.toContain("4242");
    } finally {
      await sql`drop trigger refuse_read${sql.raw(STORE === "sqlite" ? "" : " on audit_log")}`.execute(
        store.db,
      );
      if (STORE === "postgres") await sql`drop function refuse_read()`.execute(store.db);
    }
    const read = await server.request("GET", `/tokens/${id}`, { key });
    expect(read.status, read.text).toBe(200);
    expect(read.body.data).toBe("4242424242424242");
  });

  it("fails closed: when the log cannot be written the change is not made and the caller gets a 503", async () => {
    const before = (await server.request("GET", "/applications?size=100")).body.pagination.total_items;
    if (STORE === "sqlite") {
      await sql`create trigger refuse_audit before insert on audit_log begin select raise(abort, 'audit disk full'); end`.execute(
        store.db,
      );
    } else {
      await sql`create function refuse_audit() returns trigger language plpgsql as $$ begin raise exception 'audit disk full'; end $$`.execute(
        store.db,
      );
      await sql`create trigger refuse_audit before insert on audit_log for each row execute function refuse_audit()`.execute(
        store.db,
      );
    }
    try {
      const refused = await server.request("POST", "/applications", {
        body: { name: "unlogged", type: "private", permissions: ["token:read"] },
      });
      expectProblem(refused, 503, { code: "unavailable", detail: /audit log could not be written/ });
      expect(refused.text).not.toContain("audit disk full");
      const after = (await server.request("GET", "/applications?size=100")).body.pagination.total_items;
      expect(after).toBe(before);
    } finally {
      await sql`drop trigger refuse_audit${sql.raw(STORE === "sqlite" ? "" : " on audit_log")}`.execute(
        store.db,
      );
      if (STORE === "postgres") await sql`drop function refuse_audit()`.execute(store.db);
    }
    expect(
      (
        await server.request("POST", "/applications", {
          body: { name: "logged", type: "private", permissions: ["token:read"] },
        })
      ).status,
    ).toBe(201);
  });
});
