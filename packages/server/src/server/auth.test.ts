import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";

const SOME_ID = "00000000-0000-4000-8000-000000000000";

/** Every authenticated route with the permission it must demand; a new route belongs in this table. */
const ROUTES: { method: string; path: string; permission: string; body?: unknown }[] = [
  {
    method: "POST",
    path: "/applications",
    permission: "application:create",
    body: { name: "x", type: "private" },
  },
  { method: "GET", path: "/applications", permission: "application:read" },
  { method: "GET", path: "/applications/key", permission: "application:read" },
  { method: "GET", path: `/applications/${SOME_ID}`, permission: "application:read" },
  { method: "PUT", path: `/applications/${SOME_ID}`, permission: "application:update", body: { name: "x" } },
  { method: "POST", path: `/applications/${SOME_ID}/regenerate`, permission: "application:update" },
  { method: "DELETE", path: `/applications/${SOME_ID}`, permission: "application:delete" },
  { method: "POST", path: "/reactors", permission: "reactor:create", body: { name: "x", code: "1" } },
  { method: "GET", path: "/reactors", permission: "reactor:read" },
  { method: "GET", path: `/reactors/${SOME_ID}`, permission: "reactor:read" },
  {
    method: "PUT",
    path: `/reactors/${SOME_ID}`,
    permission: "reactor:update",
    body: { name: "x", code: "1" },
  },
  { method: "PATCH", path: `/reactors/${SOME_ID}`, permission: "reactor:update", body: { name: "x" } },
  { method: "DELETE", path: `/reactors/${SOME_ID}`, permission: "reactor:delete" },
  { method: "POST", path: "/tenants", permission: "tenant:create", body: { name: "x" } },
  { method: "GET", path: "/tenants/self", permission: "tenant:read" },
  { method: "GET", path: "/webhooks/secret", permission: "webhook:read" },
  { method: "POST", path: "/webhooks/secret/rotate", permission: "webhook:update" },
  { method: "GET", path: "/logs", permission: "log:read" },
  {
    method: "POST",
    path: "/access/explain",
    permission: "application:read",
    body: { application_id: SOME_ID, containers: ["/"], permission: "token:read" },
  },
];

describe.skipIf(STORE_UNAVAILABLE)("authentication and authorization on every route", () => {
  let server: TestServer;
  let weakKey: string;
  let expiredKey: string;
  let regeneratedAwayKey: string;
  let deletedKey: string;

  beforeAll(async () => {
    server = await startTestServer();
    const create = async (body: unknown) => {
      const response = await server.request("POST", "/applications", { body });
      expect(response.status, response.text).toBe(201);
      return response.body as { id: string; key: string };
    };
    // A private key holds only token permissions: it must be refused on every management route.
    weakKey = (await create({ name: "weak", type: "private", permissions: ["token:read"] })).key;
    const expiring = await create({
      name: "expiring",
      type: "management",
      permissions: ["application:read"],
      expires_at: new Date(server.clock.now().getTime() + 1000).toISOString(),
    });
    expiredKey = expiring.key;
    const regenerated = await create({
      name: "regen",
      type: "management",
      permissions: ["application:read"],
    });
    regeneratedAwayKey = regenerated.key;
    expect((await server.request("POST", `/applications/${regenerated.id}/regenerate`)).status).toBe(200);
    const deleted = await create({ name: "deleted", type: "management", permissions: ["application:read"] });
    deletedKey = deleted.key;
    expect((await server.request("DELETE", `/applications/${deleted.id}`)).status).toBe(204);
    server.clock.advance(2000);
  });
  afterAll(() => server?.close());

  const cases = ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const);

  it.each(cases)("%s answers 401 without a key, and before reading the body", async (_name, route) => {
    const response = await server.request(route.method, route.path, {
      key: null,
      ...(route.method !== "GET" && { rawBody: "{not json" }),
    });
    expectProblem(response, 401, { code: "unauthenticated", detail: /SVC-API-KEY.*BT-API-KEY/ });
  });

  it.each(cases)("%s takes the key from BT-API-KEY exactly as from SVC-API-KEY", async (_name, route) => {
    const [svc, bt] = await Promise.all(
      ["SVC-API-KEY", "BT-API-KEY"].map((header) =>
        server.request(route.method, route.path, {
          key: null,
          headers: { [header]: weakKey },
          body: route.body,
        }),
      ),
    );
    // The weak key authenticates under either name, and is then refused the permission alike.
    expectProblem(bt!, 403, { code: "forbidden" });
    expect(bt!.body.detail).toBe(svc!.body.detail);
    for (const key of ["key_mgt_unknown", regeneratedAwayKey, expiredKey]) {
      const refused = await server.request(route.method, route.path, {
        key: null,
        headers: { "BT-API-KEY": key },
        body: route.body,
      });
      expectProblem(refused, 401, { code: "unauthenticated" });
    }
  });

  it.each(cases)(
    "%s answers 401 for unknown, regenerated-away, deleted and expired keys",
    async (_name, route) => {
      for (const key of ["key_mgt_unknown", "", regeneratedAwayKey, deletedKey, expiredKey]) {
        const response = await server.request(route.method, route.path, { key, body: route.body });
        expectProblem(response, 401, { code: "unauthenticated" });
      }
    },
  );

  it.each(cases)("%s answers 403 naming the permission to a key without it", async (_name, route) => {
    const response = await server.request(route.method, route.path, { key: weakKey, body: route.body });
    expectProblem(response, 403, { code: "forbidden" });
    expect(response.body.detail).toContain(route.permission);
  });

  it("accepts BT-API-KEY alone, and both headers when they carry the same key", async () => {
    for (const headers of [
      { "BT-API-KEY": server.bootstrapKey } as Record<string, string>,
      { "bt-api-key": server.bootstrapKey, "SVC-API-KEY": server.bootstrapKey },
    ]) {
      const response = await server.request("GET", "/applications/key", { key: null, headers });
      expect(response.status, response.text).toBe(200);
    }
  });

  it("refuses two different keys in SVC-API-KEY and BT-API-KEY, naming the conflict", async () => {
    // Even when each key alone would be accepted: the request must not act as whichever one a proxy put first.
    for (const [svc, bt] of [
      [server.bootstrapKey, weakKey],
      [weakKey, server.bootstrapKey],
      [server.bootstrapKey, "key_mgt_unknown"],
    ]) {
      const response = await server.request("GET", "/applications/key", {
        key: null,
        headers: { "SVC-API-KEY": svc!, "BT-API-KEY": bt! },
      });
      expectProblem(response, 401, {
        code: "unauthenticated",
        detail: /SVC-API-KEY and BT-API-KEY carry different keys/,
      });
    }
  });

  it("declares both headers as security schemes in the OpenAPI document", async () => {
    const document = (await server.request("GET", "/openapi.json", { key: null })).body;
    expect(document.components.securitySchemes).toEqual({
      apiKey: { type: "apiKey", in: "header", name: "SVC-API-KEY" },
      btApiKey: { type: "apiKey", in: "header", name: "BT-API-KEY" },
    });
    expect(document.security).toEqual([{ apiKey: [] }, { btApiKey: [] }]);
  });

  it("accepts the header in any letter case", async () => {
    const response = await server.request("GET", "/applications/key", {
      key: null,
      headers: { "SVC-Api-Key": server.bootstrapKey },
    });
    expect(response.status).toBe(200);
  });
});
