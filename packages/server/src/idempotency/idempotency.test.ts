import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";
import { type Store } from "../storage/database.js";

const DAY = 24 * 3_600_000;

describe.skipIf(STORE_UNAVAILABLE)("SVC-IDEMPOTENCY-KEY", () => {
  let server: TestServer;
  let store: Store;
  let caller: { id: string; key: string };
  let other: { id: string; key: string };
  let counter = 0;
  const fresh = () => `key-${Date.now()}-${++counter}`;

  const post = (path: string, body: unknown, idempotencyKey: string | undefined, key = caller.key) =>
    server.request("POST", path, {
      key,
      body,
      ...(idempotencyKey !== undefined && { headers: { "SVC-IDEMPOTENCY-KEY": idempotencyKey } }),
    });
  const tokenCount = async () =>
    (await server.request("GET", "/tokens?size=1", { key: caller.key })).body.pagination
      .total_items as number;

  beforeAll(async () => {
    server = await startTestServer();
    store = server.database.open();
    const grant = {
      type: "private",
      rules: [
        {
          priority: 1,
          container: "/",
          transform: "reveal",
          permissions: ["token:create", "token:read", "token:use"],
        },
      ],
    };
    caller = (await server.request("POST", "/applications", { body: { name: "caller", ...grant } })).body;
    other = (await server.request("POST", "/applications", { body: { name: "other", ...grant } })).body;
  });
  afterAll(async () => {
    await store?.close();
    await server?.close();
  });

  it("answers a repeated create with the first answer, byte for byte, and creates once", async () => {
    const key = fresh();
    const before = await tokenCount();
    const first = await post("/tokens", { type: "token", data: "secret value" }, key);
    expect(first.status, first.text).toBe(201);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    // The same body with its keys in another order is the same request.
    const again = await post("/tokens", { data: "secret value", type: "token" }, key);
    expect(again.status).toBe(201);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.headers.get("content-type")).toBe(first.headers.get("content-type"));
    expect(again.text).toBe(first.text);
    expect(await tokenCount()).toBe(before + 1);
  });

  it("refuses the key with another request, on another route, and keeps keys apart per Application", async () => {
    const key = fresh();
    expect((await post("/tokens", { type: "token", data: "a" }, key)).status).toBe(201);
    expectProblem(await post("/tokens", { type: "token", data: "b" }, key), 409, {
      code: "conflict",
      detail: /used for a different request/,
    });
    expectProblem(await post("/tokenize", { type: "token", data: "a" }, key), 409, { code: "conflict" });
    const theirs = await post("/tokens", { type: "token", data: "b" }, key, other.key);
    expect(theirs.status, theirs.text).toBe(201);
    expect(theirs.headers.get("idempotent-replayed")).toBeNull();
  });

  it("accepts Basis Theory's BT-IDEMPOTENCY-KEY", async () => {
    const key = fresh();
    const send = () =>
      server.request("POST", "/tokenize", {
        key: caller.key,
        body: { a: "one", b: { type: "token", data: "two" } },
        headers: { "BT-IDEMPOTENCY-KEY": key },
      });
    const first = await send();
    expect(first.status, first.text).toBe(200);
    const again = await send();
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
  });

  it("does not use up a key on a request refused before it ran, and refuses malformed keys", async () => {
    const key = fresh();
    expectProblem(await post("/tokens", { type: "nonsense", data: "x" }, key), 400);
    expect((await post("/tokens", { type: "token", data: "x" }, key)).status).toBe(201);
    expectProblem(await post("/tokens", { data: "x" }, "k".repeat(256)), 400, {
      errors: { "SVC-IDEMPOTENCY-KEY": ["must be 1–255 visible ASCII characters"] },
    });
    expectProblem(await post("/tokens", { data: "x" }, "with space"), 400);
  });

  it("ignores the key, even a malformed one, on routes that are not idempotent", async () => {
    const created = await post("/tokens", { type: "token", data: "read me" }, undefined);
    expect(created.status, created.text).toBe(201);
    const read = (key: string) =>
      server.request("GET", `/tokens/${created.body.id as string}`, {
        key: caller.key,
        headers: { "SVC-IDEMPOTENCY-KEY": key },
      });
    for (const key of ["with space", "k".repeat(256), fresh()]) {
      const answer = await read(key);
      expect(answer.status, answer.text).toBe(200);
      expect(answer.headers.get("idempotent-replayed")).toBeNull();
    }
    // A key sent with a read is not used up: a create under it runs.
    const key = fresh();
    expect((await read(key)).status).toBe(200);
    const create = await post("/tokens", { type: "token", data: "x" }, key);
    expect(create.status, create.text).toBe(201);
    expect(create.headers.get("idempotent-replayed")).toBeNull();
  });

  it("keeps the answer sealed: a new API key is replayed, but is not in the database", async () => {
    const key = fresh();
    const body = { name: "made once", type: "private", permissions: ["token:read"] };
    const send = () =>
      server.request("POST", "/applications", { body, headers: { "SVC-IDEMPOTENCY-KEY": key } });
    const first = await send();
    expect(first.status, first.text).toBe(201);
    const again = await send();
    expect(again.status).toBe(201);
    expect(again.body.key).toBe(first.body.key);
    expect(again.body.id).toBe(first.body.id);
    const rows = await store.db.selectFrom("idempotency_keys").selectAll().where("key", "=", key).execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]!.state).toBe("done");
    expect(JSON.stringify(rows)).not.toContain(first.body.key);
    expect(JSON.stringify(rows)).not.toContain("made once");
  });

  it("refuses a repeat while the first is still running, then replays it", async () => {
    const reactor = await server.request("POST", "/reactors", {
      body: {
        configuration: {},
        name: "slow",
        code: "module.exports = async () => { await new Promise((r) => setTimeout(r, 1500)); return { raw: { done: true } }; };",
      },
    });
    const key = fresh();
    const first = post(`/reactors/${reactor.body.id}/react`, {}, key);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expectProblem(await post(`/reactors/${reactor.body.id}/react`, {}, key), 409, {
      detail: /still in progress/,
    });
    expect((await first).body).toEqual({ raw: { done: true } });
    const replayed = await post(`/reactors/${reactor.body.id}/react`, {}, key);
    expect(replayed.headers.get("idempotent-replayed")).toBe("true");
    expect(replayed.body).toEqual({ raw: { done: true } });
  });

  it("frees the key when the server fails, so the request can be sent again", async () => {
    const reactor = await server.request("POST", "/reactors", {
      body: {
        configuration: {},
        name: "fails",
        code: "module.exports = async () => { throw new Error('down'); };",
      },
    });
    const key = fresh();
    for (let i = 0; i < 2; i++) {
      const failed = await post(`/reactors/${reactor.body.id}/react`, {}, key);
      expectProblem(failed, 500, { code: "reactor-error" });
      expect(failed.headers.get("idempotent-replayed")).toBeNull();
    }
  });

  it("forgets a key after 24 hours", async () => {
    const key = fresh();
    const first = await post("/tokens", { type: "token", data: "daily" }, key);
    server.clock.advance(DAY + 1);
    const later = await post("/tokens", { type: "token", data: "daily" }, key);
    expect(later.status).toBe(201);
    expect(later.headers.get("idempotent-replayed")).toBeNull();
    expect(later.body.id).not.toBe(first.body.id);
  });
});
