import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  TesseraClient,
  TesseraConnectionError,
  TesseraError,
  TesseraRateLimitError,
  TesseraServerError,
  TesseraValidationError,
} from "../src/index.js";
import { freePort } from "../../server/test/postgres-cluster.js";
import { DEFAULT_RETRY_POLICY, backoffDelayMs, parseRetryAfter, retryDelayMs } from "../src/retry.js";
import { startLoopback, type Loopback } from "./loopback.js";
import { rejectionOf } from "./rejection.js";

const ID = "5b2d1f0e-8c1a-4a57-9a43-0f6f3b1c2d4e";
const unavailable = { status: 503 };
const ok = (body: unknown = {}) => ({ status: 200, body });
const application = { id: ID, tenant_id: "t", name: "n", type: "private", permissions: [], rules: [] };
const page = { pagination: { total_items: 0, page_number: 1, page_size: 20, total_pages: 0 }, data: [] };

describe("retries", () => {
  let loopback: Loopback;
  // Small delays, so that a test of three attempts takes milliseconds; the waits' bounds are tested below.
  const clientWith = (
    options: { maxRetries?: number; retryDelayMs?: number; maxRetryDelayMs?: number } = {},
  ) => new TesseraClient({ baseUrl: loopback.url, apiKey: "k", retryDelayMs: 5, ...options });

  beforeAll(async () => {
    loopback = await startLoopback();
  });
  afterAll(() => loopback?.close());
  beforeEach(() => loopback.script(ok()));

  it("retries a GET answered 503 and returns the answer that follows", async () => {
    loopback.script(unavailable, unavailable, ok(application));
    expect(await clientWith().applications.get(ID)).toMatchObject({ id: ID, tenantId: "t" });
    expect(loopback.attempts.map((a) => `${a.method} ${a.path}`)).toEqual(
      Array(3).fill(`GET /applications/${ID}`),
    );
  });

  it.each([429, 502, 503, 504])("retries %i", async (status) => {
    loopback.script({ status }, ok(page));
    expect((await clientWith().tokens.list()).data).toEqual([]);
    expect(loopback.attempts).toHaveLength(2);
  });

  it("gives up after maxRetries retries (default 2) with the last answer's error", async () => {
    loopback.script({ status: 502 }, { status: 504 }, unavailable);
    const error = await rejectionOf(clientWith().tenants.getSelf(), TesseraServerError);
    expect(error.status).toBe(503);
    expect(loopback.attempts).toHaveLength(3);

    loopback.script(unavailable);
    await rejectionOf(clientWith({ maxRetries: 1 }).tenants.getSelf(), TesseraServerError);
    expect(loopback.attempts).toHaveLength(2);

    loopback.script(unavailable);
    await rejectionOf(clientWith({ maxRetries: 0 }).tenants.getSelf(), TesseraServerError);
    expect(loopback.attempts).toHaveLength(1);

    loopback.script(unavailable);
    await rejectionOf(clientWith({ maxRetries: 4 }).tenants.getSelf(), TesseraServerError);
    expect(loopback.attempts).toHaveLength(5);
  });

  it("never retries another 4xx or another 5xx", async () => {
    for (const status of [400, 401, 403, 404, 409, 413, 422]) {
      loopback.script({ status }, ok(application));
      const error = await rejectionOf(clientWith().applications.get(ID), TesseraError);
      expect(error.status).toBe(status);
      expect(loopback.attempts).toHaveLength(1);
    }
    loopback.script({
      status: 400,
      body: { status: 400, title: "Validation failed", errors: { name: ["x"] } },
    });
    const invalid = await rejectionOf(clientWith().tokens.search({ query: "x" }), TesseraValidationError);
    expect(invalid.errors).toEqual({ name: ["x"] });
    expect(loopback.attempts).toHaveLength(1);

    for (const status of [500, 501, 505]) {
      loopback.script({ status }, ok(application));
      await rejectionOf(clientWith().applications.get(ID), TesseraServerError);
      expect(loopback.attempts).toHaveLength(1);
    }
  });

  it("retries the idempotent calls: GET, PUT, DELETE, search and detokenize", async () => {
    const client = clientWith();
    const calls: [string, () => Promise<unknown>, unknown][] = [
      ["GET /applications/key", () => client.applications.getByKey(), application],
      ["GET /applications?id=a", () => client.applications.list({ ids: ["a"] }), page],
      ["GET /tenants/self", () => client.tenants.getSelf(), { id: "t", name: "n", created_at: "x" }],
      ["GET /tokens/t%201", () => client.tokens.get("t 1"), { id: "t 1", type: "token", containers: [] }],
      [`PUT /applications/${ID}`, () => client.applications.update(ID, { name: "n" }), application],
      [`DELETE /applications/${ID}`, () => client.applications.delete(ID), undefined],
      ["DELETE /tokens/t1", () => client.tokens.delete("t1"), undefined],
      ["POST /tokens/search", () => client.tokens.search({ query: "type:token" }), page],
      ["POST /detokenize", () => client.detokenize({ a: "{{ t1 }}" }), { a: "secret" }],
    ];
    for (const [request, call, body] of calls) {
      loopback.script(unavailable, body === undefined ? { status: 204 } : ok(body));
      await call();
      expect(loopback.attempts.map((a) => `${a.method} ${a.path}`)).toEqual([request, request]);
    }
  });

  it("never retries a call that creates or changes something: POST creates, regenerate, tokenize, PATCH", async () => {
    const client = clientWith();
    const calls: [string, () => Promise<unknown>][] = [
      ["POST /applications", () => client.applications.create({ name: "n", type: "private" })],
      [`POST /applications/${ID}/regenerate`, () => client.applications.regenerateKey(ID)],
      ["POST /tenants", () => client.tenants.create({ name: "n" })],
      ["POST /tokens", () => client.tokens.create({ data: "secret" })],
      ["POST /tokenize", () => client.tokenize(["secret"])],
      ["PATCH /tokens/t1", () => client.tokens.update("t1", { metadata: { a: "b" } })],
    ];
    for (const [request, call] of calls) {
      for (const status of [429, 502, 503, 504]) {
        loopback.script({ status }, ok());
        const error = await rejectionOf(call(), TesseraError);
        expect(error.status).toBe(status);
        expect(loopback.attempts.map((a) => `${a.method} ${a.path}`)).toEqual([request]);
      }
    }
  });

  it("never follows a redirect: the API key stays with the server it was meant for", async () => {
    const elsewhere = await startLoopback();
    try {
      loopback.script({ status: 307, headers: { location: `${elsewhere.url}/steal` }, body: {} });
      const error = await rejectionOf(clientWith().tenants.getSelf(), TesseraError);
      expect(error.status).toBe(307);
      expect(loopback.attempts).toHaveLength(1);
      expect(elsewhere.attempts).toHaveLength(0);
    } finally {
      await elsewhere.close();
    }
  });

  it("never retries a connection failure or a timeout: the server may have acted on the request", async () => {
    let calls = 0;
    const counting = new TesseraClient({
      baseUrl: `http://127.0.0.1:${await freePort()}`,
      apiKey: "k",
      fetch: (input, init) => {
        calls++;
        return fetch(input, init);
      },
    });
    await rejectionOf(counting.applications.getByKey(), TesseraConnectionError);
    expect(calls).toBe(1);
  });

  it("waits as long as Retry-After says, in seconds or as an HTTP date, and exposes it on the 429", async () => {
    loopback.script({ status: 429, headers: { "retry-after": "1" } }, ok(application));
    await clientWith().applications.get(ID);
    const [first, second] = loopback.attempts;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
    expect(second!.at - first!.at).toBeLessThan(3_000);

    const inTwoSeconds = new Date(Date.now() + 2_000).toUTCString();
    loopback.script({ status: 503, headers: { "retry-after": inTwoSeconds } }, ok(application));
    await clientWith().applications.get(ID);
    const [before, after] = loopback.attempts;
    // The date has whole seconds, so the wait is 1–2 s.
    expect(after!.at - before!.at).toBeGreaterThanOrEqual(950);
    expect(after!.at - before!.at).toBeLessThan(3_000);

    loopback.script({ status: 429, headers: { "retry-after": "7" } });
    const error = await rejectionOf(
      clientWith({ maxRetries: 0 }).applications.get(ID),
      TesseraRateLimitError,
    );
    expect(error).toMatchObject({ status: 429, retryAfter: 7, name: "TesseraRateLimitError" });
    expect(error).toBeInstanceOf(TesseraError);
  });

  it("caps a long Retry-After at maxRetryDelayMs", async () => {
    loopback.script({ status: 429, headers: { "retry-after": "3600" } }, ok(application));
    const started = performance.now();
    await clientWith({ maxRetryDelayMs: 50 }).applications.get(ID);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(loopback.attempts).toHaveLength(2);
  });

  it("spaces attempts with full jitter: each wait below retryDelayMs · 2^n", async () => {
    loopback.script(unavailable);
    await rejectionOf(
      clientWith({ maxRetries: 3, retryDelayMs: 80 }).applications.get(ID),
      TesseraServerError,
    );
    const gaps = loopback.attempts.slice(1).map((attempt, i) => attempt.at - loopback.attempts[i]!.at);
    expect(gaps).toHaveLength(3);
    // Upper bounds with room for the loopback round trip and timer lateness on a busy machine.
    gaps.forEach((gap, n) => expect(gap).toBeLessThan(80 * 2 ** n + 150));
  });
});

describe("backoff arithmetic", () => {
  const policy = { maxRetries: 5, baseDelayMs: 100, maxDelayMs: 1_000 };

  it("draws uniformly below min(maxDelayMs, baseDelayMs · 2^retry)", () => {
    expect([0, 1, 2, 3, 4, 5].map((retry) => backoffDelayMs(retry, policy, () => 0))).toEqual([
      0, 0, 0, 0, 0, 0,
    ]);
    expect([0, 1, 2, 3, 4, 5].map((retry) => backoffDelayMs(retry, policy, () => 0.999_999))).toEqual([
      99, 199, 399, 799, 999, 999,
    ]);
    expect(backoffDelayMs(2, policy, () => 0.5)).toBe(200);

    const samples = Array.from({ length: 2_000 }, () => backoffDelayMs(3, policy));
    expect(Math.min(...samples)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...samples)).toBeLessThan(800);
    // Spread over the whole interval, not bunched near its top as a fixed step plus a little jitter would be.
    expect(samples.filter((ms) => ms < 400).length).toBeGreaterThan(800);
    expect(samples.filter((ms) => ms >= 400).length).toBeGreaterThan(800);
  });

  it("prefers Retry-After, capped, over the backoff", () => {
    expect(retryDelayMs(0, policy, 0.2, () => 0.9)).toBe(200);
    expect(retryDelayMs(0, policy, 60, () => 0.9)).toBe(1_000);
    expect(retryDelayMs(1, policy, undefined, () => 0.5)).toBe(100);
    expect(DEFAULT_RETRY_POLICY).toEqual({ maxRetries: 2, baseDelayMs: 500, maxDelayMs: 10_000 });
  });

  it("reads Retry-After as delay-seconds or an HTTP date", () => {
    const now = Date.parse("2030-01-01T00:00:00Z");
    expect(parseRetryAfter("5", now)).toBe(5);
    expect(parseRetryAfter(" 0 ", now)).toBe(0);
    expect(parseRetryAfter("Tue, 01 Jan 2030 00:00:03 GMT", now)).toBe(3);
    expect(parseRetryAfter("Mon, 31 Dec 2029 23:00:00 GMT", now)).toBe(0);
    expect(parseRetryAfter("soon", now)).toBeUndefined();
    expect(parseRetryAfter("-1", now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });

  it("refuses nonsensical retry options", () => {
    const make = (options: object) => () =>
      new TesseraClient({ baseUrl: "http://x", apiKey: "k", ...options });
    expect(make({ maxRetries: -1 })).toThrow(/maxRetries/);
    expect(make({ maxRetries: 1.5 })).toThrow(/maxRetries/);
    expect(make({ retryDelayMs: Number.NaN })).toThrow(/retryDelayMs/);
    expect(make({ maxRetryDelayMs: -5 })).toThrow(/maxRetryDelayMs/);
  });
});
