import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";

const privateApp = {
  name: "backend",
  type: "private",
  permissions: ["token:use"],
  rules: [
    {
      description: "cards, masked",
      priority: 1,
      container: "/PCI/",
      transform: "mask",
      permissions: ["token:read", "token:search"],
    },
  ],
};

describe.skipIf(STORE_UNAVAILABLE)("Applications API", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  async function create(body: unknown = privateApp) {
    const response = await server.request("POST", "/applications", { body });
    expect(response.status, response.text).toBe(201);
    return response.body as { id: string; key: string; [k: string]: unknown };
  }

  describe("create", () => {
    it("returns 201 with the Application and its key once, normalized", async () => {
      const bootstrap = (await server.request("GET", "/applications/key")).body;
      const created = await create();
      expect(created).toMatchObject({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        tenant_id: bootstrap.tenant_id,
        name: "backend",
        type: "private",
        permissions: ["token:use"],
        rules: [
          {
            description: "cards, masked",
            priority: 1,
            container: "/pci/",
            transform: "mask",
            permissions: ["token:read", "token:search"],
          },
        ],
        created_by: bootstrap.id,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      });
      expect(created.key).toMatch(/^key_prv_[A-Za-z0-9_-]{43}$/);
      expect(created).not.toHaveProperty("modified_at");

      const fetched = await server.request("GET", `/applications/${created.id}`);
      expect(fetched.status).toBe(200);
      expect(fetched.body).not.toHaveProperty("key");
      const { key: _key, ...withoutKey } = created;
      expect(fetched.body).toEqual(withoutKey);
    });

    it.each([
      ["public", "key_pub_", { permissions: ["token:create"] }],
      ["management", "key_mgt_", { permissions: ["application:read"] }],
    ])("issues typed keys for %s Applications", async (type, prefix, grant) => {
      const created = await create({ name: `a ${type}`, type, ...grant });
      expect(created.key.startsWith(prefix)).toBe(true);
      const self = await server.request("GET", "/applications/key", { key: created.key });
      if (type === "management") {
        expect(self.status).toBe(200);
        expect(self.body.id).toBe(created.id);
      } else {
        expectProblem(self, 403, { code: "forbidden", detail: /application:read/ });
      }
    });

    it("accepts a bodiless request shape only where no body is needed", async () => {
      const response = await server.request("POST", "/applications", { rawBody: "" });
      expectProblem(response, 400, { code: "validation-failed", errors: { body: ["must be an object"] } });
    });

    it.each<[string, unknown, Record<string, string[]>]>([
      [
        "missing name and type",
        { permissions: ["token:use"] },
        { name: ["is required"], type: ["is required"] },
      ],
      ["empty name", { ...privateApp, name: "" }, { name: ["must not be empty"] }],
      ["blank name", { ...privateApp, name: "   " }, { name: ["must not be blank"] }],
      [
        "name over 200",
        { ...privateApp, name: "x".repeat(201) },
        { name: ["must be at most 200 characters"] },
      ],
      [
        "unknown type",
        { ...privateApp, type: "admin" },
        { type: ["must be one of: private, public, management"] },
      ],
      [
        "neither permissions nor rules",
        { name: "n", type: "private" },
        { permissions: ["permissions or rules must be non-empty"] },
      ],
      [
        "empty permissions and rules",
        { name: "n", type: "private", permissions: [], rules: [] },
        { permissions: ["permissions or rules must be non-empty"] },
      ],
      [
        "unknown permission",
        { name: "n", type: "private", permissions: ["token:fly"] },
        { "permissions[0]": [expect.stringMatching(/^must be one of: token:create/)] },
      ],
      [
        "permission not for the type",
        { name: "n", type: "public", permissions: ["token:create", "token:read"] },
        { "permissions[1]": ["token:read is not allowed for public Applications"] },
      ],
      [
        "token permission on management",
        { name: "n", type: "management", permissions: ["token:read"] },
        { "permissions[0]": ["token:read is not allowed for management Applications"] },
      ],
      [
        "management permission on private",
        { name: "n", type: "private", permissions: ["application:read"] },
        { "permissions[0]": ["application:read is not allowed for private Applications"] },
      ],
      [
        "rules on management",
        { name: "n", type: "management", permissions: ["application:read"], rules: privateApp.rules },
        { rules: ["management Applications cannot have access rules"] },
      ],
      [
        "priority below 1",
        { ...privateApp, rules: [{ ...privateApp.rules[0], priority: 0 }] },
        { "rules[0].priority": ["must be at least 1"] },
      ],
      [
        "priority not an integer",
        { ...privateApp, rules: [{ ...privateApp.rules[0], priority: 1.5 }] },
        { "rules[0].priority": ["must be an integer"] },
      ],
      [
        "priority as a string",
        { ...privateApp, rules: [{ ...privateApp.rules[0], priority: "1" }] },
        { "rules[0].priority": ["must be an integer"] },
      ],
      [
        "duplicate priority",
        { ...privateApp, rules: [privateApp.rules[0], { ...privateApp.rules[0], container: "/pii/" }] },
        { "rules[1].priority": ["priority 1 is used by another rule"] },
      ],
      [
        "missing container",
        { ...privateApp, rules: [{ priority: 1, transform: "reveal", permissions: ["token:read"] }] },
        { "rules[0].container": ["is required for private Applications"] },
      ],
      [
        "container not a path",
        { ...privateApp, rules: [{ ...privateApp.rules[0], container: "pci" }] },
        { "rules[0].container": [expect.stringMatching(/leading and a trailing slash/)] },
      ],
      [
        "container without trailing slash",
        { ...privateApp, rules: [{ ...privateApp.rules[0], container: "/pci" }] },
        { "rules[0].container": [expect.stringMatching(/leading and a trailing slash/)] },
      ],
      [
        "container with a dot segment",
        { ...privateApp, rules: [{ ...privateApp.rules[0], container: "/pci/../pii/" }] },
        { "rules[0].container": ["must not have . or .. as a segment"] },
      ],
      [
        "container that is a dot segment",
        { ...privateApp, rules: [{ ...privateApp.rules[0], container: "/./" }] },
        { "rules[0].container": ["must not have . or .. as a segment"] },
      ],
      [
        "container and conditions",
        {
          ...privateApp,
          rules: [
            { ...privateApp.rules[0], conditions: [{ attribute: "id", operator: "equals", value: "x" }] },
          ],
        },
        { "rules[0].conditions": ["container and conditions are mutually exclusive"] },
      ],
      [
        "conditions without container",
        {
          ...privateApp,
          rules: [
            {
              priority: 1,
              transform: "reveal",
              permissions: ["token:read"],
              conditions: [{ attribute: "id", operator: "equals", value: "x" }],
            },
          ],
        },
        { "rules[0].container": ["is required for private Applications"] },
      ],
      [
        "bad condition enums",
        {
          ...privateApp,
          rules: [
            {
              ...privateApp.rules[0],
              container: undefined,
              conditions: [{ attribute: "type", operator: "contains", value: "x" }],
            },
          ],
        },
        {
          "rules[0].conditions[0].attribute": ["must be one of: id, container"],
          "rules[0].conditions[0].operator": ["must be one of: starts_with, equals"],
        },
      ],
      [
        "unknown transform",
        { ...privateApp, rules: [{ ...privateApp.rules[0], transform: "show" }] },
        { "rules[0].transform": ["must be one of: redact, mask, reveal"] },
      ],
      [
        "missing transform",
        { ...privateApp, rules: [{ priority: 1, container: "/a/", permissions: ["token:read"] }] },
        { "rules[0].transform": ["is required"] },
      ],
      [
        "rule without permissions",
        { ...privateApp, rules: [{ ...privateApp.rules[0], permissions: [] }] },
        { "rules[0].permissions": ["must hold at least one permission"] },
      ],
      [
        "rule with a management permission",
        { ...privateApp, rules: [{ ...privateApp.rules[0], permissions: ["reactor:read"] }] },
        {
          "rules[0].permissions[0]": [
            "reactor:read cannot be granted by an access rule (token permissions only)",
          ],
        },
      ],
      [
        "rule permission not for the type",
        { name: "n", type: "public", rules: [{ ...privateApp.rules[0], permissions: ["token:search"] }] },
        { "rules[0].permissions[0]": ["token:search is not allowed for public Applications"] },
      ],
      [
        "expires_at not a date-time",
        { ...privateApp, expires_at: "tomorrow" },
        { expires_at: ["must be a valid date-time"] },
      ],
      [
        "expires_at on a leap second",
        { ...privateApp, expires_at: "2030-12-31T23:59:60Z" },
        { expires_at: ["must be a valid date-time"] },
      ],
      [
        "expires_at in the past",
        { ...privateApp, expires_at: "2001-01-01T00:00:00Z" },
        { expires_at: ["must be in the future"] },
      ],
      [
        "permissions not an array",
        { ...privateApp, permissions: "token:use" },
        { permissions: ["must be an array or null"] },
      ],
    ])("rejects %s with 400 naming the field", async (_case, body, errors) => {
      const before = (await server.request("GET", "/applications?size=100")).body.pagination
        .total_items as number;
      const response = await server.request("POST", "/applications", { body });
      expectProblem(response, 400, { code: "validation-failed", errors });
      const after = (await server.request("GET", "/applications?size=100")).body.pagination
        .total_items as number;
      expect(after).toBe(before);
    });

    it("lists every problem at once", async () => {
      const response = await server.request("POST", "/applications", {
        body: {
          name: "",
          type: "private",
          rules: [{ priority: 0, container: "x", transform: "no", permissions: [] }],
        },
      });
      expectProblem(response, 400);
      expect(Object.keys(response.body.errors).sort()).toEqual(
        ["name", "rules[0].priority", "rules[0].transform"].sort(),
      );
    });

    it("lists the service's checks together too", async () => {
      const response = await server.request("POST", "/applications", {
        body: { name: " ", type: "private", permissions: [], expires_at: "2001-01-01T00:00:00Z" },
      });
      expectProblem(response, 400, {
        errors: {
          name: ["must not be blank"],
          permissions: ["permissions or rules must be non-empty"],
          expires_at: ["must be in the future"],
        },
      });
    });

    it("ignores unknown fields instead of storing them", async () => {
      const created = await create({ ...privateApp, create_key: true, colour: "red" });
      expect(created).not.toHaveProperty("colour");
      expect(created).not.toHaveProperty("create_key");
    });
  });

  describe("list", () => {
    it("pages with the envelope, filters by repeated id, and answers past the end with data: []", async () => {
      const ids = [];
      for (let i = 0; i < 3; i++) ids.push((await create({ ...privateApp, name: `list ${i}` })).id);
      const all = await server.request("GET", "/applications?size=100");
      expect(all.status).toBe(200);
      const total = all.body.pagination.total_items as number;
      expect(all.body.data).toHaveLength(total);
      expect(all.body.pagination).toEqual({
        total_items: total,
        page_number: 1,
        page_size: 100,
        total_pages: 1,
      });
      for (const item of all.body.data) expect(item).not.toHaveProperty("key");

      const filtered = await server.request("GET", `/applications?id=${ids[0]}&id=${ids[2]}`);
      expect(filtered.status).toBe(200);
      expect(filtered.body.data.map((a: { id: string }) => a.id).sort()).toEqual([ids[0], ids[2]].sort());
      expect(filtered.body.pagination).toEqual({
        total_items: 2,
        page_number: 1,
        page_size: 20,
        total_pages: 1,
      });

      const single = await server.request("GET", `/applications?id=${ids[1]}`);
      expect(single.body.data.map((a: { id: string }) => a.id)).toEqual([ids[1]]);

      const page2 = await server.request("GET", "/applications?size=2&page=2");
      expect(page2.status).toBe(200);
      expect(page2.body.pagination).toEqual({
        total_items: total,
        page_number: 2,
        page_size: 2,
        total_pages: Math.ceil(total / 2),
      });
      expect(page2.body.data).toEqual(all.body.data.slice(2, 4));

      const past = await server.request("GET", "/applications?page=999");
      expect(past.status).toBe(200);
      expect(past.body.data).toEqual([]);
      expect(past.body.pagination.total_items).toBe(total);
    });

    it.each([
      ["size=0", { size: ["must be at least 1"] }],
      ["size=101", { size: ["must be at most 100"] }],
      ["page=0", { page: ["must be at least 1"] }],
      ["page=abc", { page: ["must be an integer"] }],
      ["id=not-a-uuid", { "id[0]": ["must be a valid uuid"] }],
    ])("rejects %s with 400", async (query, errors) => {
      expectProblem(await server.request("GET", `/applications?${query}`), 400, {
        code: "validation-failed",
        errors,
      });
    });
  });

  describe("get by key", () => {
    it("returns the calling Application without its key", async () => {
      const response = await server.request("GET", "/applications/key");
      expect(response.status).toBe(200);
      expect(response.body).toMatchObject({ type: "management", name: "default administrator" });
      expect(response.body.permissions).toContain("tenant:create");
      expect(response.body).not.toHaveProperty("key");
    });
  });

  describe("get", () => {
    it("answers 404 for an unknown id and 400 for a malformed one", async () => {
      expectProblem(await server.request("GET", "/applications/00000000-0000-4000-8000-000000000000"), 404, {
        code: "not-found",
      });
      expectProblem(await server.request("GET", "/applications/nope"), 400, {
        errors: { id: ["must be a valid uuid"] },
      });
    });
  });

  describe("update", () => {
    it("replaces name, permissions and rules, keeps the type and sets modified_*", async () => {
      const created = await create();
      const bootstrap = (await server.request("GET", "/applications/key")).body;
      const response = await server.request("PUT", `/applications/${created.id}`, {
        body: { name: "renamed", type: "management", permissions: ["token:read", "token:read"] },
      });
      expect(response.status, response.text).toBe(200);
      expect(response.body).toMatchObject({
        id: created.id,
        name: "renamed",
        type: "private",
        permissions: ["token:read"],
        rules: [],
        modified_by: bootstrap.id,
        modified_at: expect.any(String),
      });
      expect(response.body).not.toHaveProperty("key");
      expect((await server.request("GET", `/applications/${created.id}`)).body).toEqual(response.body);
      // The key still works: an update is not a regeneration.
      expect((await server.request("GET", "/tenants/self", { key: created.key })).status).toBe(403);
    });

    it("validates like create, against the stored type, and changes nothing on failure", async () => {
      const created = await create();
      const response = await server.request("PUT", `/applications/${created.id}`, {
        body: { name: "x", permissions: ["application:read"] },
      });
      expectProblem(response, 400, {
        errors: { "permissions[0]": ["application:read is not allowed for private Applications"] },
      });
      expectProblem(
        await server.request("PUT", `/applications/${created.id}`, { body: { name: "x" } }),
        400,
        {
          errors: { permissions: ["permissions or rules must be non-empty"] },
        },
      );
      expectProblem(
        await server.request("PUT", `/applications/${created.id}`, { body: { permissions: ["token:use"] } }),
        400,
        {
          errors: { name: ["is required"] },
        },
      );
      const unchanged = await server.request("GET", `/applications/${created.id}`);
      expect(unchanged.body.name).toBe("backend");
      expect(unchanged.body).not.toHaveProperty("modified_at");
    });

    it("answers 404 for an unknown id", async () => {
      expectProblem(
        await server.request("PUT", "/applications/00000000-0000-4000-8000-000000000000", {
          body: { name: "x", permissions: ["token:use"] },
        }),
        404,
      );
    });
  });

  describe("regenerate", () => {
    it("returns a new key and the old one answers 401 at once", async () => {
      const created = await create({ name: "mgr", type: "management", permissions: ["application:read"] });
      expect((await server.request("GET", "/applications/key", { key: created.key })).status).toBe(200);
      const regenerated = await server.request("POST", `/applications/${created.id}/regenerate`);
      expect(regenerated.status, regenerated.text).toBe(200);
      expect(regenerated.body.key).toMatch(/^key_mgt_/);
      expect(regenerated.body.key).not.toBe(created.key);
      expect(regenerated.body.id).toBe(created.id);
      expectProblem(await server.request("GET", "/applications/key", { key: created.key }), 401, {
        code: "unauthenticated",
      });
      expect((await server.request("GET", "/applications/key", { key: regenerated.body.key })).status).toBe(
        200,
      );
    });

    it("accepts the empty form-encoded POST that basis-theory-js sends", async () => {
      const created = await create();
      const response = await server.request("POST", `/applications/${created.id}/regenerate`, {
        rawBody: "",
        contentType: "application/x-www-form-urlencoded",
      });
      expect(response.status, response.text).toBe(200);
      expect(response.body.key).toMatch(/^key_prv_/);
    });

    it("answers 404 for an unknown id", async () => {
      expectProblem(
        await server.request("POST", "/applications/00000000-0000-4000-8000-000000000000/regenerate"),
        404,
      );
    });
  });

  describe("delete", () => {
    it("answers 204, then 404, and the key answers 401", async () => {
      const created = await create({ name: "gone", type: "management", permissions: ["application:read"] });
      expect((await server.request("GET", "/applications/key", { key: created.key })).status).toBe(200);
      const deleted = await server.request("DELETE", `/applications/${created.id}`);
      expect(deleted.status).toBe(204);
      expect(deleted.text).toBe("");
      expectProblem(await server.request("GET", `/applications/${created.id}`), 404);
      expectProblem(await server.request("DELETE", `/applications/${created.id}`), 404);
      expectProblem(await server.request("GET", "/applications/key", { key: created.key }), 401);
    });
  });

  describe("changed by another process", () => {
    // The CLI (`tessera recover`) or a second server on the same store writes through its own connection; the
    // key lookup this server may keep in memory (storage/versioned-cache.ts) must see it on the very next request.
    it("applies new permissions, and a removed Application, on the next request with the key", async () => {
      const created = await create({
        name: "elsewhere",
        type: "management",
        permissions: ["application:read"],
      });
      expect((await server.request("GET", "/applications/key", { key: created.key })).status).toBe(200);
      const other = server.database.open();
      try {
        await other.db
          .updateTable("applications")
          .set({ permissions: '["tenant:read"]' })
          .where("id", "=", created.id)
          .execute();
        expectProblem(await server.request("GET", "/applications/key", { key: created.key }), 403, {
          code: "forbidden",
        });
        expect((await server.request("GET", "/tenants/self", { key: created.key })).status).toBe(200);
        await other.db.deleteFrom("applications").where("id", "=", created.id).execute();
        expectProblem(await server.request("GET", "/tenants/self", { key: created.key }), 401, {
          code: "unauthenticated",
        });
      } finally {
        await other.close();
      }
    });
  });

  describe("expiry", () => {
    it("rejects an expired key at once, before any sweep", async () => {
      // A sweeper that never runs during the test: what refuses the key is authentication itself.
      const unswept = await startTestServer({ TESSERA_SWEEP_INTERVAL_MS: "86400000" });
      try {
        const expiresAt = new Date(unswept.clock.now().getTime() + 60_000).toISOString();
        const response = await unswept.request("POST", "/applications", {
          body: {
            name: "temp",
            type: "management",
            permissions: ["application:read"],
            expires_at: expiresAt,
          },
        });
        expect(response.status).toBe(201);
        const created = response.body;
        expect(created.expires_at).toBe(expiresAt);
        expect((await unswept.request("GET", "/applications/key", { key: created.key })).status).toBe(200);

        const listed = async () => {
          const page = await unswept.request("GET", "/applications?size=100");
          expect(page.status, page.text).toBe(200);
          return page.body as { pagination: { total_items: number }; data: { id: string }[] };
        };
        const before = await listed();
        expect(before.data.map((a) => a.id)).toContain(created.id);

        unswept.clock.advance(61_000);
        expectProblem(await unswept.request("GET", "/applications/key", { key: created.key }), 401);
        // Gone for the API as well, at once: not shown, not listed, not changed, as after the sweep.
        expectProblem(await unswept.request("GET", `/applications/${created.id}`), 404, {
          code: "not-found",
        });
        const after = await listed();
        expect(after.data.map((a) => a.id)).not.toContain(created.id);
        expect(after.pagination.total_items).toBe(before.pagination.total_items - 1);
        expect((await unswept.request("GET", `/applications?id=${created.id}`)).body.data).toEqual([]);
        expectProblem(
          await unswept.request("PUT", `/applications/${created.id}`, {
            body: { name: "revived", permissions: ["application:read"] },
          }),
          404,
        );
        expectProblem(await unswept.request("POST", `/applications/${created.id}/regenerate`), 404);
        expectProblem(await unswept.request("DELETE", `/applications/${created.id}`), 404);
        // Still in the store, untouched: what hides it is its expiry, not a sweep.
        const store = unswept.database.open();
        try {
          const row = await store.db
            .selectFrom("applications")
            .select("name")
            .where("id", "=", created.id)
            .executeTakeFirst();
          expect(row?.name).toBe("temp");
        } finally {
          await store.close();
        }
      } finally {
        await unswept.close();
      }
    });

    it("is deleted by the sweeper once expired", async () => {
      const created = await create({
        name: "temp",
        type: "management",
        permissions: ["application:read"],
        expires_at: new Date(server.clock.now().getTime() + 60_000).toISOString(),
      });
      server.clock.advance(61_000);
      await expect
        .poll(async () => (await server.request("GET", `/applications/${created.id}`)).status, {
          timeout: 5_000,
        })
        .toBe(404);
    });
  });

  describe("privilege", () => {
    it("refuses to grant a management permission the caller does not hold", async () => {
      const limited = await create({
        name: "limited",
        type: "management",
        permissions: ["application:create", "application:read", "application:update"],
      });
      const escalate = await server.request("POST", "/applications", {
        key: limited.key,
        body: { name: "evil", type: "management", permissions: ["tenant:create"] },
      });
      expectProblem(escalate, 403, { code: "forbidden", detail: /tenant:create/ });
      const selfEscalate = await server.request("PUT", `/applications/${limited.id}`, {
        key: limited.key,
        body: { name: "limited", permissions: ["application:read", "application:delete"] },
      });
      expectProblem(selfEscalate, 403, { detail: /application:delete/ });
      const allowed = await server.request("POST", "/applications", {
        key: limited.key,
        body: { name: "ok", type: "private", permissions: ["token:read"] },
      });
      expect(allowed.status).toBe(201);
    });
  });

  describe("GET /permissions", () => {
    type Entry = { type: string; description: string; application_types: string[] };

    it("lists every permission with the types that may hold it, to any valid key", async () => {
      const all = await server.request("GET", "/permissions");
      expect(all.status, all.text).toBe(200);
      const byName = new Map((all.body as Entry[]).map((entry) => [entry.type, entry]));
      expect(byName.get("token:create")).toMatchObject({ application_types: ["private", "public"] });
      expect(byName.get("token:search")).toMatchObject({ application_types: ["private"] });
      expect(byName.get("reactor:update")).toMatchObject({ application_types: ["management"] });
      for (const entry of byName.values()) expect(entry.description.length).toBeGreaterThan(10);
      // Public and private keys, which hold no application:read, read the same catalog.
      for (const body of [
        { name: "pub", type: "public", permissions: ["token:create"] },
        { name: "prv", type: "private", permissions: ["token:read"] },
      ]) {
        const { key } = await create(body);
        const response = await server.request("GET", "/permissions", { key });
        expect(response.status, response.text).toBe(200);
        expect(response.body).toEqual(all.body);
      }
      expectProblem(await server.request("GET", "/permissions", { key: null }), 401, {
        code: "unauthenticated",
      });
      expectProblem(await server.request("GET", "/permissions", { key: "key_prv_unknown" }), 401);
    });

    it("keeps the permissions an application_type may hold, and refuses an unknown type", async () => {
      const granted = async (type: string) => {
        const response = await server.request("GET", `/permissions?application_type=${type}`);
        expect(response.status, response.text).toBe(200);
        return (response.body as Entry[]).map((entry) => entry.type);
      };
      expect(await granted("public")).toEqual(["token:create", "token:update"]);
      expect(await granted("private")).toEqual([
        "token:create",
        "token:read",
        "token:update",
        "token:delete",
        "token:search",
        "token:use",
      ]);
      const management = await granted("management");
      expect(management).toContain("application:create");
      expect(management.some((permission) => permission.startsWith("token:"))).toBe(false);
      // Each one is what POST /applications accepts for that type.
      const accepted = await server.request("POST", "/applications", {
        body: { name: "all public", type: "public", permissions: await granted("public") },
      });
      expect(accepted.status, accepted.text).toBe(201);
      expectProblem(await server.request("GET", "/permissions?application_type=root"), 400, {
        code: "validation-failed",
        errors: { application_type: ["must be one of: private, public, management"] },
      });
    });
  });
});
