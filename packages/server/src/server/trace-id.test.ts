import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STORE_UNAVAILABLE,
  expectProblem,
  startTestServer,
  type TestResponse,
  type TestServer,
} from "../../test/harness.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface LogLine {
  readonly reqId?: string;
  readonly msg?: string;
  readonly req?: { readonly url?: string };
}

describe.skipIf(STORE_UNAVAILABLE)("trace ids", () => {
  let server: TestServer;
  const logs: LogLine[] = [];

  const traced = (
    method: string,
    path: string,
    id: string,
    options: { key?: string | null; body?: unknown } = {},
  ) => server.request(method, path, { ...options, headers: { "SVC-TRACE-ID": id } });

  function expectEchoed(response: TestResponse, id: string | RegExp): string {
    const echoed = response.headers.get("svc-trace-id");
    if (typeof id === "string") expect(echoed, response.text).toBe(id);
    else expect(echoed, response.text).toMatch(id);
    expect(response.headers.get("request-id")).toBe(echoed);
    return echoed!;
  }

  beforeAll(async () => {
    server = await startTestServer(
      { TESSERA_BODY_LIMIT: "4096" },
      { logLevel: "info", logSink: (line) => logs.push(JSON.parse(line) as LogLine) },
    );
  });
  afterAll(() => server?.close());

  it("echoes the caller's SVC-TRACE-ID on successes and on every kind of problem", async () => {
    const id = `trace-${randomBytes(6).toString("hex")}`;
    expectEchoed(await traced("GET", "/healthz", id, { key: null }), id);
    const created = await traced("POST", "/applications", id, {
      body: { name: "traced", type: "private", permissions: ["token:use"] },
    });
    expect(created.status, created.text).toBe(201);
    expectEchoed(created, id);

    const problems: [TestResponse, number][] = [
      [await traced("GET", "/applications", id, { key: null }), 401],
      [await traced("GET", "/applications", id, { key: "not-a-key" }), 401],
      [await traced("GET", "/tokens", id), 403],
      [await traced("GET", "/nowhere", id, { key: null }), 404],
      [await traced("GET", "/applications/%zz", id, { key: null }), 400],
      [await traced("GET", `/applications/${"x".repeat(501)}`, id, { key: null }), 414],
      [await traced("POST", "/applications", id, { body: { name: "x".repeat(5000) } }), 413],
      [await traced("POST", "/applications", id, { body: { type: "private" } }), 400],
    ];
    for (const [response, status] of problems) {
      expectProblem(response, status);
      expectEchoed(response, id);
    }
  });

  it("accepts ids of the usual shapes up to 128 characters", async () => {
    for (const id of [
      "0af7651916cd43dd8448eb211c80319c",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "01J9Z8Y7X6W5V4T3S2R1Q0P9N8",
      "a/b+c=d:e.f~g_h",
      "x".repeat(128),
    ]) {
      expectEchoed(await traced("GET", "/healthz", id, { key: null }), id);
    }
  });

  it("takes Basis Theory's BT-TRACE-ID when SVC-TRACE-ID is absent", async () => {
    const bt = await server.request("GET", "/healthz", { key: null, headers: { "BT-TRACE-ID": "bt-123" } });
    expectEchoed(bt, "bt-123");
    const both = await server.request("GET", "/healthz", {
      key: null,
      headers: { "BT-TRACE-ID": "bt-123", "SVC-TRACE-ID": "svc-456" },
    });
    expectEchoed(both, "svc-456");
  });

  it("replaces a missing, unsafe or over-long id by a fresh UUID", async () => {
    const seen = new Set<string>();
    for (const id of ["", "a b", 'x"y', "<script>", "a;b", "x".repeat(129)]) {
      const response = await traced("GET", "/healthz", id, { key: null });
      expect(response.status).toBe(200);
      seen.add(expectEchoed(response, UUID));
    }
    for (let i = 0; i < 2; i++) {
      seen.add(expectEchoed(await server.request("GET", "/healthz", { key: null }), UUID));
    }
    expect(seen.size).toBe(8);
  });

  it("replaces an id that looks like a card number or an API key: it would be on every log line", async () => {
    for (const id of [
      "4111111111111111",
      "order-4111111111111111-x",
      "378282246310005",
      "12345678901234567890",
      `key_prv_${randomBytes(32).toString("base64url")}`,
      `key_mgt_${randomBytes(32).toString("base64url")}`,
    ]) {
      expectEchoed(await traced("GET", "/healthz", id, { key: null }), UUID);
    }
    // Digit runs that are not card numbers (too short, or failing the Luhn check) are kept.
    for (const id of ["4111111111111112", "order-123456789012", "key-prv-not-a-key"]) {
      expectEchoed(await traced("GET", "/healthz", id, { key: null }), id);
    }
  });

  it("puts the id on every log line of the request, and only on that request's", async () => {
    const id = `log-${randomBytes(6).toString("hex")}`;
    const path = `/tokens/${randomBytes(4).toString("hex")}`;
    const before = logs.length;
    expectProblem(await traced("GET", path, id), 403);
    expectEchoed(await traced("GET", "/healthz", id, { key: null }), id);
    await server.request("GET", "/healthz", { key: null });

    const lines = logs.slice(before);
    const ofRequest = lines.filter((line) => line.reqId === id);
    expect(ofRequest.map((line) => line.msg)).toEqual([
      "incoming request",
      "request completed",
      "incoming request",
      "request completed",
    ]);
    // The route's pattern stands for the URL: a path parameter can be a token's alias, a query anything.
    expect(ofRequest[0]!.req?.url).toBe("/tokens/:id");
    // Every line logged during a request names one; the untraced request got its own.
    expect(lines.every((line) => typeof line.reqId === "string")).toBe(true);
    expect(lines.filter((line) => line.reqId !== id).map((line) => line.reqId)).toEqual([
      expect.stringMatching(UUID),
      expect.stringMatching(UUID),
    ]);
  });

  it("is not replaced by a reactor answering with a header of the same name", async () => {
    const user = await server.request("POST", "/applications", {
      body: { name: "user", type: "private", permissions: ["token:use"] },
    });
    const reactor = await server.request("POST", "/reactors", {
      body: {
        name: "forger",
        configuration: {},
        code: `
          const { CustomHttpResponseError } = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");
          module.exports = async () => {
            throw new CustomHttpResponseError({
              status: 418,
              headers: { "SVC-TRACE-ID": "forged", "Request-Id": "forged", "X-Kept": "yes" },
              body: { teapot: true },
            });
          };`,
      },
    });
    expect(reactor.status, reactor.text).toBe(201);
    const id = `react-${randomBytes(6).toString("hex")}`;
    const response = await traced("POST", `/reactors/${reactor.body.id}/react`, id, {
      key: user.body.key,
      body: {},
    });
    // A custom response may set only headers that describe its body (reactors/custom-response.ts): this one is
    // refused whole, and the answer still carries the request's own id.
    expect(response.status, response.text).toBe(500);
    expect(response.body).toMatchObject({
      type: "urn:tessera:problem:reactor-error",
      errors: {
        "headers.SVC-TRACE-ID": ["is not a header a reactor may set"],
        "headers.Request-Id": ["is not a header a reactor may set"],
      },
    });
    expect(response.headers.get("x-kept")).toBeNull();
    expectEchoed(response, id);
  });
});
