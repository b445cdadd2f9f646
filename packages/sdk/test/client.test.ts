import { readFileSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../server/test/harness.js";
import { freePort } from "../../server/test/postgres-cluster.js";
import {
  SDK_VERSION,
  TesseraClient,
  TesseraConnectionError,
  TesseraAuthenticationError,
  TesseraError,
  TesseraForbiddenError,
  TesseraNotFoundError,
  TesseraServerError,
  TesseraValidationError,
  type AccessRule,
  type Application,
  type CreateApplicationInput,
} from "../src/index.js";
import { lastOf, recordingFetch, type SentRequest } from "./recorder.js";
import { rejectionOf } from "./rejection.js";

const MISSING_ID = "00000000-0000-4000-8000-000000000000";
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

const maskedCards: AccessRule = {
  description: "cards, masked",
  priority: 1,
  container: "/PCI/",
  transform: "mask",
  permissions: ["token:read", "token:search"],
};

describe.skipIf(STORE_UNAVAILABLE)("TesseraClient against the real server", () => {
  let server: TestServer;
  let admin: TesseraClient;
  let bootstrap: Application;
  const sent: SentRequest[] = [];

  beforeAll(async () => {
    server = await startTestServer();
    admin = new TesseraClient({
      baseUrl: server.url,
      apiKey: server.bootstrapKey,
      fetch: recordingFetch(sent),
    });
    bootstrap = await admin.applications.getByKey();
  });
  afterAll(() => server?.close());

  const clientFor = (apiKey: string) => new TesseraClient({ baseUrl: server.url, apiKey });

  const lastSent = () => lastOf(sent);

  async function createPrivate(overrides: Partial<CreateApplicationInput> = {}) {
    return admin.applications.create({
      name: "backend",
      type: "private",
      permissions: ["token:use"],
      ...overrides,
    });
  }

  describe("applications", () => {
    it("create sends snake_case JSON and returns the Application in camelCase with its key", async () => {
      const expiresAt = new Date(Date.now() + 86_400_000);
      const created = await admin.applications.create({
        name: "backend",
        type: "private",
        permissions: ["token:use"],
        rules: [maskedCards],
        expiresAt,
      });

      expect(created).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        tenantId: bootstrap.tenantId,
        name: "backend",
        type: "private",
        permissions: ["token:use"],
        rules: [{ ...maskedCards, container: "/pci/" }],
        createdBy: bootstrap.id,
        createdAt: expect.stringMatching(ISO),
        expiresAt: expiresAt.toISOString(),
        key: expect.stringMatching(/^key_prv_/),
      });

      const request = lastSent();
      expect(request.method).toBe("POST");
      expect(request.url).toBe(`${server.url}/applications`);
      expect(request.headers.get("content-type")).toBe("application/json");
      expect(JSON.parse(request.body ?? "")).toEqual({
        name: "backend",
        type: "private",
        permissions: ["token:use"],
        rules: [maskedCards],
        expires_at: expiresAt.toISOString(),
      });
    });

    it("list filters by repeated id and pages with a camelCase envelope", async () => {
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push((await createPrivate({ name: `list ${i}` })).id);
      const [first, second, third] = ids as [string, string, string];

      const filtered = await admin.applications.list({ ids: [first, third] });
      expect(lastSent().url).toBe(`${server.url}/applications?id=${first}&id=${third}`);
      expect(lastSent().headers.has("content-type")).toBe(false);
      expect(filtered.pagination).toEqual({ totalItems: 2, pageNumber: 1, pageSize: 20, totalPages: 1 });
      expect(filtered.data.map((a) => a.id).sort()).toEqual([first, third].sort());
      for (const application of filtered.data) {
        expect(application).toMatchObject({
          tenantId: bootstrap.tenantId,
          createdBy: bootstrap.id,
          type: "private",
        });
        expect(application).not.toHaveProperty("tenant_id");
        expect(application).not.toHaveProperty("key");
      }

      const all = await admin.applications.list({ size: 100 });
      const total = all.pagination.totalItems;
      expect(total).toBeGreaterThanOrEqual(4);
      expect(all.data.map((a) => a.id)).toEqual(expect.arrayContaining([bootstrap.id, ...ids]));

      const page2 = await admin.applications.list({ page: 2, size: 2 });
      expect(lastSent().url).toBe(`${server.url}/applications?page=2&size=2`);
      expect(page2).toEqual({
        pagination: { totalItems: total, pageNumber: 2, pageSize: 2, totalPages: Math.ceil(total / 2) },
        data: all.data.slice(2, 4),
      });

      const single = await admin.applications.list({ ids: [second] });
      expect(single.data.map((a) => a.id)).toEqual([second]);

      const past = await admin.applications.list({ page: 999 });
      expect(past).toEqual({
        pagination: { totalItems: total, pageNumber: 999, pageSize: 20, totalPages: Math.ceil(total / 20) },
        data: [],
      });
    });

    it("listAll yields every Application of every page, fetching each page only when reached", async () => {
      const all = await admin.applications.list({ size: 100 });
      expect(all.pagination.totalItems).toBeGreaterThan(2);
      const before = sent.length;
      const seen: Application[] = [];
      for await (const application of admin.applications.listAll({ size: 2 })) seen.push(application);
      expect(seen).toEqual(all.data);
      const pages = Math.ceil(all.pagination.totalItems / 2);
      expect(sent.slice(before).map((request) => new URL(request.url).search)).toEqual(
        Array.from({ length: pages }, (_, i) => `?page=${i + 1}&size=2`),
      );

      const started = sent.length;
      for await (const application of admin.applications.listAll({ size: 2 })) {
        expect(application.id).toBe(all.data[0]!.id);
        break;
      }
      expect(sent.length - started).toBe(1);
    });

    it("get returns the Application without its key", async () => {
      const { key: _key, ...created } = await createPrivate({ rules: [maskedCards] });
      const fetched = await admin.applications.get(created.id);
      expect(fetched).toEqual(created);
      expect(fetched).not.toHaveProperty("key");
    });

    it("getByKey returns the Application of the calling key", async () => {
      expect(bootstrap).toMatchObject({ type: "management", name: "default administrator", rules: [] });
      expect(bootstrap.permissions).toContain("tenant:create");
      expect(lastSent().headers.get("svc-api-key")).toBe(server.bootstrapKey);

      const { key, ...manager } = await admin.applications.create({
        name: "manager",
        type: "management",
        permissions: ["application:read"],
      });
      expect(await clientFor(key).applications.getByKey()).toEqual(manager);
    });

    it("update replaces name, permissions and rules and sets modifiedBy/modifiedAt", async () => {
      const created = await createPrivate({ rules: [maskedCards] });
      const updated = await admin.applications.update(created.id, {
        name: "renamed",
        permissions: ["token:read"],
      });
      expect(lastSent().method).toBe("PUT");
      expect(updated).toEqual({
        id: created.id,
        tenantId: created.tenantId,
        name: "renamed",
        type: "private",
        permissions: ["token:read"],
        rules: [],
        createdBy: bootstrap.id,
        createdAt: created.createdAt,
        modifiedBy: bootstrap.id,
        modifiedAt: expect.stringMatching(ISO),
      });
      expect(await admin.applications.get(created.id)).toEqual(updated);
    });

    it("regenerateKey returns a new key, and the old one then fails with 401", async () => {
      const created = await admin.applications.create({
        name: "rotating",
        type: "management",
        permissions: ["application:read"],
      });
      const regenerated = await admin.applications.regenerateKey(created.id);
      const request = lastSent();
      expect(request.method).toBe("POST");
      expect(request.url).toBe(`${server.url}/applications/${created.id}/regenerate`);
      expect(request.body).toBeUndefined();
      expect(request.headers.has("content-type")).toBe(false);

      expect(regenerated).toMatchObject({
        id: created.id,
        key: expect.stringMatching(/^key_mgt_/),
        modifiedBy: bootstrap.id,
        modifiedAt: expect.stringMatching(ISO),
      });
      expect(regenerated.key).not.toBe(created.key);

      const error = await rejectionOf(
        clientFor(created.key).applications.getByKey(),
        TesseraAuthenticationError,
      );
      expect(error).toMatchObject({
        status: 401,
        type: "urn:tessera:problem:unauthenticated",
        title: "Unauthenticated",
      });
      expect(error.detail).toMatch(/not valid/);
      expect((await clientFor(regenerated.key).applications.getByKey()).id).toBe(created.id);
    });

    it("delete resolves to undefined (204), then get fails with 404", async () => {
      const created = await createPrivate();
      expect(await admin.applications.delete(created.id)).toBeUndefined();
      expect(lastSent().method).toBe("DELETE");

      const error = await rejectionOf(admin.applications.get(created.id), TesseraNotFoundError);
      expect(error).toMatchObject({
        name: "TesseraNotFoundError",
        status: 404,
        type: "urn:tessera:problem:not-found",
        title: "Not found",
        detail: `Application ${created.id} was not found`,
        message: `Application ${created.id} was not found`,
      });
      expect(error.errors).toBeUndefined();
      expect(error.body).toEqual({
        type: "urn:tessera:problem:not-found",
        title: "Not found",
        status: 404,
        detail: `Application ${created.id} was not found`,
        instance: `/applications/${created.id}`,
      });
    });
  });

  describe("tenants", () => {
    it("create returns the tenant and its management Application's key; getSelf answers for that key", async () => {
      const tenant = await admin.tenants.create({ name: "Acme" });
      expect(tenant).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: "Acme",
        createdBy: bootstrap.id,
        createdAt: expect.stringMatching(ISO),
        application: expect.objectContaining({
          tenantId: tenant.id,
          type: "management",
          rules: [],
          createdBy: bootstrap.id,
          key: expect.stringMatching(/^key_mgt_/),
        }),
      });
      expect(tenant.id).not.toBe(bootstrap.tenantId);
      expect(tenant.application.permissions).not.toContain("tenant:create");

      const acme = clientFor(tenant.application.key);
      expect(await acme.tenants.getSelf()).toEqual({
        id: tenant.id,
        name: "Acme",
        createdBy: bootstrap.id,
        createdAt: tenant.createdAt,
      });
      const { key: _key, ...application } = tenant.application;
      expect(await acme.applications.getByKey()).toEqual(application);

      const own = await admin.tenants.getSelf();
      expect(own).toEqual({ id: bootstrap.tenantId, name: "default", createdAt: expect.stringMatching(ISO) });
    });
  });

  describe("errors", () => {
    it("400 is a TesseraValidationError carrying the field errors map, keyed as the server names the fields", async () => {
      const error = await rejectionOf(
        admin.applications.create({ name: "n", type: "private", permissions: [], rules: [] }),
        TesseraValidationError,
      );
      expect(error).toBeInstanceOf(TesseraError);
      expect(error).toMatchObject({
        name: "TesseraValidationError",
        status: 400,
        type: "urn:tessera:problem:validation-failed",
        title: "Validation failed",
        detail: "The request has invalid fields; see errors.",
        message: "The request has invalid fields; see errors.",
      });
      expect(error.errors).toEqual({ permissions: ["permissions or rules must be non-empty"] });
      expect(error.body).toEqual({
        type: "urn:tessera:problem:validation-failed",
        title: "Validation failed",
        status: 400,
        detail: "The request has invalid fields; see errors.",
        instance: "/applications",
        errors: { permissions: ["permissions or rules must be non-empty"] },
      });

      const past = await rejectionOf(
        createPrivate({ expiresAt: "2001-01-01T00:00:00Z" }),
        TesseraValidationError,
      );
      expect(past.status).toBe(400);
      expect(past.errors).toEqual({ expires_at: ["must be in the future"] });

      const nested = await rejectionOf(
        createPrivate({ rules: [{ ...maskedCards, priority: 0 }] }),
        TesseraValidationError,
      );
      expect(nested.errors).toEqual({ "rules[0].priority": ["must be at least 1"] });
    });

    it("401 for an unknown key is a TesseraAuthenticationError", async () => {
      const error = await rejectionOf(
        clientFor("key_mgt_nope").applications.list(),
        TesseraAuthenticationError,
      );
      expect(error).toBeInstanceOf(TesseraError);
      expect(error).toMatchObject({
        name: "TesseraAuthenticationError",
        status: 401,
        type: "urn:tessera:problem:unauthenticated",
        title: "Unauthenticated",
        detail: "The API key is not valid (unknown, regenerated, deleted or expired).",
      });
      expect(error.body).toMatchObject({ status: 401, instance: "/applications" });
    });

    it("403 is a TesseraForbiddenError naming the missing permission", async () => {
      const { key } = await createPrivate();
      const error = await rejectionOf(clientFor(key).applications.list(), TesseraForbiddenError);
      expect(error).toBeInstanceOf(TesseraError);
      expect(error).toMatchObject({
        name: "TesseraForbiddenError",
        status: 403,
        type: "urn:tessera:problem:forbidden",
        title: "Forbidden",
        detail: "The Application lacks the permission application:read.",
      });
      expect(error.message).toBe(error.detail);
      expect(error.body).toMatchObject({ status: 403, detail: error.detail });
    });

    it("404 is a TesseraNotFoundError for an unknown id, on every id-taking method", async () => {
      const calls = [
        () => admin.applications.get(MISSING_ID),
        () => admin.applications.update(MISSING_ID, { name: "x", permissions: ["token:use"] }),
        () => admin.applications.regenerateKey(MISSING_ID),
        () => admin.applications.delete(MISSING_ID),
      ];
      for (const call of calls) {
        const error = await rejectionOf(call(), TesseraNotFoundError);
        expect(error).toBeInstanceOf(TesseraError);
        expect(error).toMatchObject({
          status: 404,
          type: "urn:tessera:problem:not-found",
          title: "Not found",
          detail: `Application ${MISSING_ID} was not found`,
        });
      }
    });

    it("sends the default User-Agent, or the one given", async () => {
      const version = (
        JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }
      ).version;
      expect(SDK_VERSION).toBe(version);
      await admin.tenants.getSelf();
      expect(lastSent().headers.get("user-agent")).toBe(`tessera-sdk/${version}`);

      const seen: (string | null)[] = [];
      const custom = new TesseraClient({
        baseUrl: `${server.url}/`,
        apiKey: server.bootstrapKey,
        userAgent: "billing-service/2.3",
        fetch: (input, init) => {
          seen.push(new Headers(init?.headers).get("user-agent"));
          return fetch(input, init);
        },
      });
      // A trailing slash on baseUrl is not doubled.
      expect((await custom.tenants.getSelf()).id).toBe(bootstrap.tenantId);
      expect(seen).toEqual(["billing-service/2.3"]);
    });
  });
});

describe("TesseraClient without a response", () => {
  // Paths: /hang/... never answers; /stall/... sends headers and part of a body, then nothing; /proxy/... is a
  // proxy's HTML 502.
  const local = http.createServer((request, response) => {
    if (request.url?.startsWith("/stall/")) {
      response.writeHead(200, { "content-type": "application/json" });
      response.write('{"id":');
    } else if (request.url?.startsWith("/proxy/")) {
      response.writeHead(502, { "content-type": "text/html" }).end("<html>Bad Gateway</html>");
    }
  });
  let localUrl: string;

  beforeAll(async () => {
    await new Promise<void>((resolve) => local.listen(0, "127.0.0.1", resolve));
    localUrl = `http://127.0.0.1:${(local.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    local.closeAllConnections();
    await new Promise<void>((resolve, reject) => local.close((error) => (error ? reject(error) : resolve())));
  });

  it("raises TesseraConnectionError with the cause when nothing listens", async () => {
    const port = await freePort();
    const client = new TesseraClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: "key_secret_value" });
    const error = await rejectionOf(client.applications.get(MISSING_ID), TesseraConnectionError);
    expect(error.name).toBe("TesseraConnectionError");
    expect(error.timedOut).toBe(false);
    expect(error.message).toBe(
      `GET http://127.0.0.1:${port}/applications/${MISSING_ID} failed: fetch failed (ECONNREFUSED)`,
    );
    expect(error.message).not.toContain("key_secret_value");
    expect(error.cause).toBeInstanceOf(TypeError);
    expect(error).not.toBeInstanceOf(TesseraError);
  });

  it("raises TesseraConnectionError after timeoutMs when the server never answers", async () => {
    const client = new TesseraClient({ baseUrl: `${localUrl}/hang`, apiKey: "k", timeoutMs: 200 });
    const started = Date.now();
    const error = await rejectionOf(client.tenants.getSelf(), TesseraConnectionError);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(190);
    expect(elapsed).toBeLessThan(5_000);
    expect(error.timedOut).toBe(true);
    expect(error.message).toBe(`GET ${localUrl}/hang/tenants/self timed out after 200 ms`);
    expect(error.cause).toMatchObject({ name: "AbortError" });
  });

  it("counts reading the body against timeoutMs", async () => {
    const client = new TesseraClient({ baseUrl: `${localUrl}/stall`, apiKey: "k", timeoutMs: 200 });
    const error = await rejectionOf(client.applications.getByKey(), TesseraConnectionError);
    expect(error.timedOut).toBe(true);
  });

  it("raises TesseraError with the raw text for a non-JSON error body", async () => {
    const client = new TesseraClient({ baseUrl: `${localUrl}/proxy`, apiKey: "k", maxRetries: 0 });
    const error = await rejectionOf(client.applications.list(), TesseraServerError);
    expect(error).toMatchObject({ status: 502, message: "HTTP 502", body: "<html>Bad Gateway</html>" });
    expect(error.type).toBeUndefined();
    expect(error.title).toBeUndefined();
    expect(error.detail).toBeUndefined();
    expect(error.errors).toBeUndefined();
  });
});
