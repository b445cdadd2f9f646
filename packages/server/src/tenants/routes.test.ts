import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";

describe.skipIf(STORE_UNAVAILABLE)("Tenants API and tenant isolation", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  async function createTenant(name: string) {
    const response = await server.request("POST", "/tenants", { body: { name } });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  it("creates a tenant with its first management Application and returns the key once", async () => {
    const bootstrap = (await server.request("GET", "/applications/key")).body;
    const tenant = await createTenant("Acme");
    expect(tenant).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Acme",
      created_by: bootstrap.id,
      created_at: expect.any(String),
      application: {
        tenant_id: tenant.id,
        type: "management",
        rules: [],
        key: expect.stringMatching(/^key_mgt_/),
      },
    });
    expect(tenant.id).not.toBe(bootstrap.tenant_id);
    // Every management permission but creating further tenants.
    expect(tenant.application.permissions).toContain("application:create");
    expect(tenant.application.permissions).not.toContain("tenant:create");

    const self = await server.request("GET", "/tenants/self", { key: tenant.application.key });
    expect(self.status).toBe(200);
    expect(self.body).toEqual({
      id: tenant.id,
      name: "Acme",
      created_by: bootstrap.id,
      created_at: tenant.created_at,
    });

    const own = await server.request("GET", "/tenants/self");
    expect(own.body).toMatchObject({ id: bootstrap.tenant_id, name: "default" });
    expect(own.body).not.toHaveProperty("created_by");

    const application = await server.request("GET", "/applications/key", { key: tenant.application.key });
    const { key: _key, ...withoutKey } = tenant.application;
    expect(application.body).toEqual(withoutKey);
  });

  it("refuses tenant creation without tenant:create, and validates the name", async () => {
    const tenant = await createTenant("NoNesting");
    expectProblem(
      await server.request("POST", "/tenants", { key: tenant.application.key, body: { name: "x" } }),
      403,
      {
        code: "forbidden",
        detail: /tenant:create/,
      },
    );
    expectProblem(await server.request("POST", "/tenants", { body: {} }), 400, {
      errors: { name: ["is required"] },
    });
    expectProblem(await server.request("POST", "/tenants", { body: { name: " " } }), 400, {
      errors: { name: ["must not be blank"] },
    });
    expectProblem(await server.request("POST", "/tenants", { body: { name: "x".repeat(201) } }), 400, {
      errors: { name: ["must be at most 200 characters"] },
    });
  });

  it("answers another tenant's Application ids exactly like missing ones", async () => {
    const a = await createTenant("A");
    const b = await createTenant("B");
    const keyA = a.application.key as string;
    const keyB = b.application.key as string;
    const inA = await server.request("POST", "/applications", {
      key: keyA,
      body: { name: "private in A", type: "private", permissions: ["token:read"] },
    });
    expect(inA.status).toBe(201);
    const id = inA.body.id as string;
    const missing = "00000000-0000-4000-8000-000000000000";

    const attempts: [string, string, unknown?][] = [
      ["GET", `/applications/${id}`],
      ["PUT", `/applications/${id}`, { name: "stolen", permissions: ["token:read"] }],
      ["POST", `/applications/${id}/regenerate`],
      ["DELETE", `/applications/${id}`],
    ];
    for (const [method, path, body] of attempts) {
      const foreign = await server.request(method, path, { key: keyB, body });
      const absent = await server.request(method, path.replace(id, missing), { key: keyB, body });
      expectProblem(foreign, 404, { code: "not-found" });
      expect(foreign.body.detail).toBe((absent.body.detail as string).replace(missing, id));
      expect(foreign.body.title).toBe(absent.body.title);
    }
    const listed = await server.request("GET", `/applications?id=${id}`, { key: keyB });
    expect(listed.body).toEqual({
      pagination: { total_items: 0, page_number: 1, page_size: 20, total_pages: 0 },
      data: [],
    });
    const everything = await server.request("GET", "/applications?size=100", { key: keyB });
    expect(everything.body.data.map((x: { tenant_id: string }) => x.tenant_id)).toEqual([b.id]);

    // Untouched in A: not renamed, not deleted, key unchanged.
    const still = await server.request("GET", `/applications/${id}`, { key: keyA });
    expect(still.body.name).toBe("private in A");
    expect(still.body).not.toHaveProperty("modified_at");
  });
});
