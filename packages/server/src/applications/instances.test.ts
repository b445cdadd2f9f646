import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";

/**
 * A key changed through one instance is changed on every instance at its next request: two real servers on one
 * store, the change made through A, the key used through B. Whatever an instance keeps of Applications must never
 * answer for a change another instance made (SQLite: a config generation; PostgreSQL: no cache at all).
 */
describe.skipIf(STORE_UNAVAILABLE)("Applications across instances", () => {
  let a: TestServer;
  let b: TestServer | undefined;

  beforeAll(async () => {
    a = await startTestServer();
    b = await startTestServer({}, { sharing: a });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const reader = (transform: string) => ({
    name: "reader",
    type: "private",
    rules: [{ priority: 1, container: "/", transform, permissions: ["token:create", "token:read"] }],
  });

  it("refuses a regenerated Application's old key on the other instance at once", async () => {
    const created = await a.request("POST", "/applications", { body: reader("reveal") });
    expect(created.status, created.text).toBe(201);
    const token = await b!.request("POST", "/tokens", {
      key: created.body.key,
      body: { type: "token", data: "x" },
    });
    expect(token.status, token.text).toBe(201);

    const regenerated = await a.request("POST", `/applications/${created.body.id}/regenerate`);
    expect(regenerated.status, regenerated.text).toBe(200);
    expectProblem(await b!.request("GET", `/tokens/${token.body.id}`, { key: created.body.key }), 401, {
      code: "unauthenticated",
    });
    const withNewKey = await b!.request("GET", `/tokens/${token.body.id}`, { key: regenerated.body.key });
    expect(withNewKey.status, withNewKey.text).toBe(200);
  });

  it("applies rules narrowed through one instance on the other at its next request", async () => {
    const created = await a.request("POST", "/applications", { body: reader("reveal") });
    const token = await b!.request("POST", "/tokens", {
      key: created.body.key,
      body: { type: "token", data: "a secret value" },
    });
    const before = await b!.request("GET", `/tokens/${token.body.id}`, { key: created.body.key });
    expect(before.body.data).toBe("a secret value");

    const narrowed = await a.request("PUT", `/applications/${created.body.id}`, { body: reader("redact") });
    expect(narrowed.status, narrowed.text).toBe(200);
    const after = await b!.request("GET", `/tokens/${token.body.id}`, { key: created.body.key });
    expect(after.status, after.text).toBe(200);
    expect(after.body.data).toBeUndefined();
  });
});
