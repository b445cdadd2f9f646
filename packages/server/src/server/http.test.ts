import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApplicationService } from "../applications/service.js";
import type { AuditService } from "../audit/service.js";
import type { Idempotency } from "../idempotency/service.js";
import type { Principal } from "../access/principal.js";
import { createInternalCredentials } from "../reactors/internal-credentials.js";
import type { InvocationService } from "../reactors/invocations/service.js";
import type { ReactorInvocation } from "../reactors/invoke.js";
import type { ReactorService } from "../reactors/service.js";
import type { TenantService } from "../tenants/service.js";
import type { ExplainService } from "../explain/service.js";
import type { TokenService } from "../tokens/service.js";
import type { WebhookSecrets } from "../webhooks/secrets.js";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";
import type { Authenticator } from "./auth.js";
import type { SessionService } from "../sessions/service.js";
import { buildApp } from "../app.js";

describe.skipIf(STORE_UNAVAILABLE)("HTTP behaviour shared by every route", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ TESSERA_BODY_LIMIT: "4096" });
  });
  afterAll(() => server?.close());

  it("answers an unknown route with a 404 problem, key or not", async () => {
    expectProblem(await server.request("GET", "/nowhere", { key: null }), 404, {
      code: "not-found",
      detail: /GET \/nowhere/,
    });
    expectProblem(await server.request("PATCH", "/applications"), 404, { code: "not-found" });
  });

  it("answers a malformed percent-encoding and an over-long path segment with problems", async () => {
    expectProblem(await server.request("GET", "/applications/%zz", { key: null }), 400, {
      code: "malformed-request",
      detail: /percent-encoded/,
    });
    expectProblem(await server.request("GET", `/applications/${"x".repeat(501)}`, { key: null }), 414, {
      code: "uri-too-long",
    });
  });

  it("refuses a NUL character in a name on every store alike", async () => {
    const response = await server.request("POST", "/applications", {
      body: { name: "a\u0000b", type: "private", permissions: ["token:use"] },
    });
    expectProblem(response, 400, { errors: { name: ["must not contain NUL characters"] } });
  });

  it("routes a trailing slash like the bare path", async () => {
    const bare = await server.request("GET", "/applications");
    const slash = await server.request("GET", "/applications/");
    expect(slash.status).toBe(200);
    expect(slash.body).toEqual(bare.body);
    const created = await server.request("POST", "/applications/", {
      body: { name: "slash", type: "private", permissions: ["token:use"] },
    });
    expect(created.status).toBe(201);
    expect((await server.request("GET", `/applications/${created.body.id}/`)).status).toBe(200);
  });

  it("answers malformed JSON with 400 without echoing the body", async () => {
    const response = await server.request("POST", "/applications", {
      rawBody: '{"name": "4111111111111111", ',
    });
    expectProblem(response, 400, { code: "malformed-request", detail: /not valid JSON/ });
    expect(response.text).not.toContain("4111111111111111");
  });

  it.each([
    "text/plain",
    "application/x-www-form-urlencoded",
    "application/xml",
    "multipart/form-data; boundary=x",
  ])("answers a %s body with 415", async (contentType) => {
    const response = await server.request("POST", "/applications", { rawBody: "name=x", contentType });
    expectProblem(response, 415, { code: "unsupported-media-type" });
  });

  it("answers a body over the configured limit with 413 and stores nothing", async () => {
    const before = (await server.request("GET", "/applications")).body.pagination.total_items as number;
    const response = await server.request("POST", "/applications", {
      body: {
        name: "big",
        type: "private",
        permissions: ["token:use"],
        rules: [],
        padding: "x".repeat(5000),
      },
    });
    expectProblem(response, 413, { code: "payload-too-large" });
    expect((await server.request("GET", "/applications")).body.pagination.total_items).toBe(before);
  });

  it("serves health, readiness, the OpenAPI document and its UI without a key", async () => {
    expect(await server.request("GET", "/healthz", { key: null })).toMatchObject({
      status: 200,
      body: { status: "ok" },
    });
    expect(await server.request("GET", "/readyz", { key: null })).toMatchObject({
      status: 200,
      body: { status: "ready" },
    });
    const docs = await fetch(`${server.url}/docs/`);
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain("swagger");
  });

  it("documents every API route with its schemas, the key header and problem responses", async () => {
    const { status, body: openapi } = await server.request("GET", "/openapi.json", { key: null });
    expect(status).toBe(200);
    expect(openapi.openapi).toBe("3.1.0");
    expect(openapi.components.securitySchemes.apiKey).toEqual({
      type: "apiKey",
      in: "header",
      name: "SVC-API-KEY",
    });
    const operations = Object.entries(openapi.paths as Record<string, Record<string, any>>).flatMap(
      ([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`),
    );
    expect(operations.sort()).toEqual(
      [
        "DELETE /applications/{id}",
        "DELETE /tenants/{id}",
        "DELETE /tokens/{id}",
        "GET /tokens",
        "GET /tokens/{id}",
        "PATCH /tokens/{id}",
        "POST /detokenize",
        "POST /tokenize",
        "POST /tokens",
        "POST /tokens/search",
        "GET /v2/tokens",
        "GET /permissions",
        "POST /v2/tokens/search",
        "GET /applications",
        "GET /applications/key",
        "GET /applications/{id}",
        "GET /healthz",
        "GET /readyz",
        "GET /tenants/self",
        "POST /applications",
        "POST /applications/{id}/regenerate",
        "POST /tenants",
        "PUT /applications/{id}",
        "POST /reactors",
        "GET /reactors",
        "GET /reactors/{id}",
        "PUT /reactors/{id}",
        "PATCH /reactors/{id}",
        "DELETE /reactors/{id}",
        "POST /reactors/{id}/react",
        "GET /reactors/{id}/invocations/{invocation_id}",
        "GET /webhooks/secret",
        "POST /webhooks/secret/rotate",
        "GET /logs",
        "POST /access/explain",
        "POST /sessions",
        "POST /sessions/authorize",
      ].sort(),
    );
    const create = openapi.paths["/applications"].post;
    expect(create.requestBody.content["application/json"].schema.required).toEqual(["name", "type"]);
    expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(["201", "4XX", "5XX"]));
    expect(create.responses["201"].content["application/json"].schema.properties).toHaveProperty("key");
    expect(
      openapi.paths["/applications/{id}"].get.responses["200"].content["application/json"].schema.properties,
    ).not.toHaveProperty("key");
  });
});

describe("an unexpected failure", () => {
  it("is a generic 500 problem carrying the request id, never the internal message", async () => {
    const principal = {
      tenantId: "t",
      application: { id: "a", permissions: ["application:read"], rules: [] },
    } as unknown as Principal;
    const applications = {
      authenticate: () => Promise.resolve(principal),
      list: () => Promise.reject(new Error("connection to 10.0.0.7 refused; password=hunter2")),
    } as unknown as ApplicationService;
    const app = await buildApp({
      applications,
      reactors: {} as ReactorService,
      invocation: {} as ReactorInvocation,
      invocations: {} as InvocationService,
      credentials: createInternalCredentials(() => Promise.resolve(undefined)),
      webhookSecrets: {} as WebhookSecrets,
      audit: {} as AuditService,
      idempotency: {} as Idempotency,
      tenants: {} as TenantService,
      tokens: {} as TokenService,
      sessions: { authenticator: (next: Authenticator) => next } as unknown as SessionService,
      explain: {} as ExplainService,
      readiness: { check: () => Promise.reject(new Error("down")) },
      bodyLimit: 1024,
      logger: false,
    });
    try {
      const response = await app.inject({
        method: "GET",
        url: "/applications",
        headers: { "svc-api-key": "k" },
      });
      expect(response.statusCode).toBe(500);
      expect(response.headers["content-type"]).toMatch(/^application\/problem\+json/);
      const body = response.json();
      expect(body).toMatchObject({
        type: "urn:tessera:problem:internal",
        status: 500,
        title: "Internal server error",
      });
      expect(body.detail).toContain(response.headers["request-id"] ?? "req-");
      expect(response.body).not.toMatch(/hunter2|10\.0\.0\.7/);

      const ready = await app.inject({ method: "GET", url: "/readyz" });
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toMatchObject({ type: "urn:tessera:problem:unavailable", status: 503 });
    } finally {
      await app.close();
    }
  });
});
