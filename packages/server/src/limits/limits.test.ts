import { request as httpRequest } from "node:http";
import { setTimeout as sleep, setImmediate as nextTurn } from "node:timers/promises";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  expectProblem,
  startTestServer,
  type TestResponse,
  type TestServer,
} from "../../test/harness.js";

/**
 * Sends a request from a chosen loopback address (any of 127.0.0.0/8 on Linux), so that each test has source
 * addresses of its own.
 */
function sendFrom(
  server: TestServer,
  from: string,
  method: string,
  path: string,
  options: { key?: string | null; body?: unknown } = {},
): Promise<TestResponse> {
  const url = new URL(path, server.url);
  const key = options.key === undefined ? server.bootstrapKey : options.key;
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      url,
      {
        method,
        localAddress: from,
        headers: {
          ...(key !== null && { "svc-api-key": key }),
          ...(body !== undefined && { "content-type": "application/json" }),
        },
      },
      (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
        incoming.on("error", reject);
        incoming.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const headers = new Headers();
          for (const [name, value] of Object.entries(incoming.headers)) {
            if (typeof value === "string") headers.set(name, value);
          }
          let parsed: unknown;
          try {
            parsed = text.length > 0 ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          resolve({ status: incoming.statusCode ?? 0, headers, text, body: parsed });
        });
      },
    );
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

/**
 * Sends `burst` requests, each of which must pass (the bucket starts full and nothing else draws on it), then
 * sends until one is refused. With a rate of one a second, only as many more may pass as seconds went by: a
 * slow machine makes the test longer, never wrong.
 */
async function exhaust(burst: number, send: () => Promise<TestResponse>): Promise<TestResponse> {
  const started = performance.now();
  for (let i = 0; i < burst; i++) {
    const passed = await send();
    expect(passed.status, passed.text).toBe(200);
  }
  for (let extra = 0; extra < 20; extra++) {
    const response = await send();
    if (response.status !== 200) {
      expect(extra).toBeLessThanOrEqual(Math.ceil((performance.now() - started) / 1000));
      return response;
    }
  }
  throw new Error("never refused");
}

async function application(server: TestServer, permissions: string[]): Promise<{ id: string; key: string }> {
  const response = await server.request("POST", "/applications", {
    body: { name: `app ${permissions.join(" ")}`, type: "private", permissions },
  });
  expect(response.status, response.text).toBe(201);
  return response.body;
}

function rateLimitedBody(detail: string, instance: string) {
  return {
    type: "urn:tessera:problem:rate-limited",
    title: "Too many requests",
    status: 429,
    detail,
    instance,
  };
}

describe.skipIf(STORE_UNAVAILABLE)("rate limits over HTTP", () => {
  describe("per API key", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({
        TESSERA_RATE_LIMIT_KEY_PER_SECOND: "1",
        TESSERA_RATE_LIMIT_KEY_BURST: "5",
      });
    });
    afterAll(() => server?.close());

    it("answers 429 with Retry-After once one key has spent its burst; another key is unaffected", async () => {
      const first = await application(server, ["token:read"]);
      const second = await application(server, ["token:read"]);
      const refused = await exhaust(5, () => server.request("GET", "/tokens", { key: first.key }));
      expectProblem(refused, 429, { code: "rate-limited" });
      expect(refused.body).toEqual(
        rateLimitedBody("Too many requests with this API key; retry after 1 s.", "/tokens"),
      );
      expect(refused.headers.get("retry-after")).toBe("1");
      // Same address, other keys: untouched.
      expect((await server.request("GET", "/tokens", { key: second.key })).status).toBe(200);
      expect((await server.request("GET", "/applications")).status).toBe(200);
      // A second later the key has a token again.
      await sleep(1_100);
      expect((await server.request("GET", "/tokens", { key: first.key })).status).toBe(200);
    });

    it("never limits health probes or the documentation", async () => {
      for (let i = 0; i < 20; i++) {
        expect((await server.request("GET", "/healthz", { key: null })).status).toBe(200);
      }
      expect((await server.request("GET", "/readyz", { key: null })).status).toBe(200);
      expect((await server.request("GET", "/openapi.json", { key: null })).status).toBe(200);
    });
  });

  describe("per public key and per session (docs/limits.md#browser-keys)", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({
        TESSERA_RATE_LIMIT_KEY_PER_SECOND: "1000",
        TESSERA_RATE_LIMIT_PUBLIC_KEY_PER_SECOND: "1",
        TESSERA_RATE_LIMIT_PUBLIC_KEY_BURST: "3",
        TESSERA_RATE_LIMIT_SESSION_PER_SECOND: "1",
        TESSERA_RATE_LIMIT_SESSION_BURST: "4",
        TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE: "64",
      });
    });
    afterAll(() => server?.close());

    it("limits a public key and each session by their own buckets, not the authorizer's", async () => {
      const pub = await server.request("POST", "/applications", {
        body: { name: "page", type: "public", permissions: ["token:create"] },
      });
      expect(pub.status, pub.text).toBe(201);
      const backend = await application(server, ["token:read"]);
      const sessions: { session_key: string; nonce: string }[] = [];
      const create = async () => {
        const response = await server.request("POST", "/sessions", { key: pub.body.key });
        if (response.status === 201) sessions.push(response.body);
        return { ...response, status: response.status === 201 ? 200 : response.status };
      };
      const refused = await exhaust(3, create);
      expectProblem(refused, 429, { code: "rate-limited" });
      expect(refused.body.detail).toBe("Too many requests with this API key; retry after 1 s.");

      const [first, second] = sessions;
      for (const session of [first!, second!]) {
        const authorized = await server.request("POST", "/sessions/authorize", {
          key: backend.key,
          body: { nonce: session.nonce, permissions: ["token:read"] },
        });
        expect(authorized.status, authorized.text).toBe(200);
      }
      expectProblem(
        await exhaust(4, () => server.request("GET", "/tokens", { key: first!.session_key })),
        429,
        { code: "rate-limited" },
      );
      // Another session, and the authorizing Application itself, are untouched.
      expect((await server.request("GET", "/tokens", { key: second!.session_key })).status).toBe(200);
      expect((await server.request("GET", "/tokens", { key: backend.key })).status).toBe(200);
    });

    it("counts a session's data: search terms apart from its authorizer's", async () => {
      const pub = await server.request("POST", "/applications", {
        body: { name: "search page", type: "public", permissions: ["token:create"] },
      });
      const backend = await application(server, ["token:search"]);
      const session = await server.request("POST", "/sessions", { key: pub.body.key });
      expect(session.status, session.text).toBe(201);
      const authorized = await server.request("POST", "/sessions/authorize", {
        key: backend.key,
        body: { nonce: session.body.nonce, permissions: ["token:search"] },
      });
      expect(authorized.status, authorized.text).toBe(200);
      const query = Array.from({ length: 64 }, (_, i) => `data:${1000 + i}`).join(" OR ");
      const search = (key: string) => server.request("POST", "/tokens/search", { key, body: { query } });
      expect((await search(session.body.session_key)).status).toBe(200);
      expectProblem(await search(session.body.session_key), 429, { code: "rate-limited" });
      // The backend's own budget is whole.
      expect((await search(backend.key)).status).toBe(200);
    });
  });

  describe("per source address, in a capped map", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({
        TESSERA_RATE_LIMIT_ADDRESS_PER_SECOND: "1",
        TESSERA_RATE_LIMIT_ADDRESS_BURST: "5",
        TESSERA_RATE_LIMIT_MAX_ENTRIES: "2",
      });
    });
    afterAll(() => server?.close());

    it("answers 429 to a flooding address whatever key it sends; another address is unaffected", async () => {
      const refused = await exhaust(5, () => sendFrom(server, "127.0.0.2", "GET", "/applications"));
      expect(refused.body).toEqual(
        rateLimitedBody("Too many requests from this address; retry after 1 s.", "/applications"),
      );
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(refused.headers.get("content-type")).toMatch(/^application\/problem\+json/);
      expect((await sendFrom(server, "127.0.0.3", "GET", "/applications")).status).toBe(200);
      // Two addresses fit in the map: the first is still remembered, with or without a key.
      expect((await sendFrom(server, "127.0.0.2", "GET", "/applications")).status).toBe(429);
      expect((await sendFrom(server, "127.0.0.2", "GET", "/applications", { key: null })).status).toBe(429);
    });

    it("counts unauthenticated requests too", async () => {
      const anonymous = () => sendFrom(server, "127.0.0.4", "GET", "/applications", { key: null });
      for (let i = 0; i < 5; i++) expect((await anonymous()).status).toBe(401);
      let refused = await anonymous();
      for (let extra = 0; refused.status === 401 && extra < 20; extra++) refused = await anonymous();
      expectProblem(refused, 429, { code: "rate-limited" });
    });

    it("keeps at most TESSERA_RATE_LIMIT_MAX_ENTRIES addresses, forgetting the least recently seen", async () => {
      const refused = await exhaust(5, () => sendFrom(server, "127.0.0.5", "GET", "/applications"));
      expect(refused.status).toBe(429);
      // Two other addresses push 127.0.0.5 out of the two-entry map; it starts afresh.
      expect((await sendFrom(server, "127.0.0.6", "GET", "/applications")).status).toBe(200);
      expect((await sendFrom(server, "127.0.0.7", "GET", "/applications")).status).toBe(200);
      expect((await sendFrom(server, "127.0.0.5", "GET", "/applications")).status).toBe(200);
    });
  });

  describe("failed authentications per address", () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startTestServer({
        TESSERA_RATE_LIMIT_AUTH_FAILURES_PER_MINUTE: "1",
        TESSERA_RATE_LIMIT_AUTH_FAILURES_BURST: "3",
      });
    });
    afterAll(() => server?.close());

    it("refuses an address that keeps failing, even with a valid key, before trying the key", async () => {
      const wrong = { key: `key-that-does-not-exist-${"x".repeat(20)}` };
      for (let i = 0; i < 3; i++) {
        expectProblem(await sendFrom(server, "127.0.0.2", "GET", "/applications", wrong), 401, {
          code: "unauthenticated",
        });
      }
      const refused = await sendFrom(server, "127.0.0.2", "GET", "/applications", wrong);
      expect(refused.status, refused.text).toBe(429);
      const retryAfter = Number(refused.headers.get("retry-after"));
      // One failure a minute: the next is allowed within a minute, and not within the next few seconds.
      expect(retryAfter).toBeGreaterThan(30);
      expect(retryAfter).toBeLessThanOrEqual(60);
      expect(refused.body).toEqual(
        rateLimitedBody(
          `Too many failed authentications from this address; retry after ${retryAfter} s.`,
          "/applications",
        ),
      );
      expect((await sendFrom(server, "127.0.0.2", "GET", "/applications")).status).toBe(429);
      // Another address is not affected, and its own failures count separately.
      expect((await sendFrom(server, "127.0.0.3", "GET", "/applications")).status).toBe(200);
      expect((await sendFrom(server, "127.0.0.3", "GET", "/applications", wrong)).status).toBe(401);
    });

    it("does not count successful requests, missing permissions or a reactor's own 401", async () => {
      const reader = await application(server, ["token:read"]);
      const user = await application(server, ["token:use"]);
      const created = await server.request("POST", "/reactors", {
        body: {
          configuration: {},
          name: "refuses",
          code: `const { AuthenticationError } = require("@tessera/reactor");
            module.exports = async () => { throw new AuthenticationError(); };`,
        },
      });
      expect(created.status, created.text).toBe(201);
      for (let i = 0; i < 5; i++) {
        const refused = await sendFrom(server, "127.0.0.4", "POST", `/reactors/${created.body.id}/react`, {
          key: user.key,
          body: { args: {} },
        });
        expectProblem(refused, 401, { code: "reactor-error" });
      }
      for (let i = 0; i < 10; i++) {
        expect((await sendFrom(server, "127.0.0.4", "GET", "/applications")).status).toBe(200);
        expect(
          (await sendFrom(server, "127.0.0.4", "GET", "/applications", { key: reader.key })).status,
        ).toBe(403);
      }
    });
  });
});

describe.skipIf(STORE_UNAVAILABLE)("data: search terms per API key", () => {
  let server: TestServer;
  beforeAll(async () => {
    // The smallest limit allowed: one query of 64 data: terms spends the whole bucket.
    server = await startTestServer({ TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE: "64" });
  });
  afterAll(() => server?.close());

  const guesses = (from: number) =>
    Array.from({ length: 64 }, (_, i) => `data:"123-45-${String(from + i).padStart(4, "0")}"`).join(" OR ");
  const search = (key: string, query: string) =>
    server.request("POST", "/tokens/search", { key, body: { query } });

  it("answers 429 with Retry-After once a key has searched its allowance of data: terms", async () => {
    const guesser = await application(server, ["token:search", "token:create"]);
    const other = await application(server, ["token:search"]);
    expect((await search(guesser.key, guesses(0))).status).toBe(200);
    const refused = await search(guesser.key, guesses(64));
    expectProblem(refused, 429, { code: "rate-limited" });
    const retryAfter = Number(refused.headers.get("retry-after"));
    // 64 terms a minute, and about 64 missing: the wait is most of a minute, whatever the machine's speed.
    expect(retryAfter).toBeGreaterThan(30);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.body).toEqual(
      rateLimitedBody(
        `Too many data: search terms with this API key; retry after ${retryAfter} s.`,
        "/tokens/search",
      ),
    );
    // Other searches and other requests of the same key are not charged; a malformed query is a 400 as ever.
    expect((await search(guesser.key, "type:social_security_number")).status).toBe(200);
    expect((await server.request("POST", "/tokens", { key: guesser.key, body: { data: "x" } })).status).toBe(
      201,
    );
    expectProblem(await search(guesser.key, "data:x AND ("), 400, { code: "validation-failed" });
    // Another key has its own allowance.
    expect((await search(other.key, guesses(128))).status).toBe(200);
  });
});

describe.skipIf(STORE_UNAVAILABLE)("bounded concurrency over HTTP", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      TESSERA_MAX_CONCURRENT_REACTS: "2",
      TESSERA_MAX_QUEUED_REACTS: "1",
      TESSERA_MAX_CONCURRENT_SEARCHES: "1",
      TESSERA_MAX_QUEUED_SEARCHES: "1",
    });
  });
  afterAll(() => server?.close());

  const overloadedBody = (what: string, instance: string) => ({
    type: "urn:tessera:problem:overloaded",
    title: "Server overloaded",
    status: 503,
    detail: `Too many ${what} in progress; retry later.`,
    instance,
  });

  it("runs two reacts, queues one and answers 503 with Retry-After to the rest", async () => {
    const created = await server.request("POST", "/reactors", {
      body: {
        configuration: {},
        name: "slow",
        code: "module.exports = async () => { await new Promise((r) => setTimeout(r, 1500)); return { raw: 'done' }; };",
      },
    });
    expect(created.status, created.text).toBe(201);
    const path = `/reactors/${created.body.id}/react`;
    const { key } = await application(server, ["token:use"]);
    // All six arrive long before the first run (1.5 s, plus the worker's cold start) ends.
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => server.request("POST", path, { key, body: { args: {} } })),
    );
    const done = answers.filter((a) => a.status === 200);
    const refused = answers.filter((a) => a.status !== 200);
    expect(done.map((a) => a.body)).toEqual([{ raw: "done" }, { raw: "done" }, { raw: "done" }]);
    expect(refused).toHaveLength(3);
    for (const answer of refused) {
      expectProblem(answer, 503, { code: "overloaded" });
      expect(answer.body).toEqual(overloadedBody("reactor invocations", path));
      expect(answer.headers.get("retry-after")).toBe("1");
    }
    // The slots came back.
    expect((await server.request("POST", path, { key, body: { args: {} } })).status).toBe(200);
  });

  it("gives a queued react's place back when its client goes away", async () => {
    const created = await server.request("POST", "/reactors", {
      body: {
        configuration: {},
        name: "slower",
        code: "module.exports = async () => { await new Promise((r) => setTimeout(r, 2500)); return { raw: 'done' }; };",
      },
    });
    expect(created.status, created.text).toBe(201);
    const path = `/reactors/${created.body.id}/react`;
    const { key } = await application(server, ["token:use"]);
    const react = () => server.request("POST", path, { key, body: { args: {} } });
    const running = [react(), react()];
    await sleep(300);
    // The queue's one place, taken by a client that leaves.
    const leaving = new AbortController();
    const left = fetch(server.url + path, {
      method: "POST",
      headers: { "content-type": "application/json", "svc-api-key": key },
      body: JSON.stringify({ args: {} }),
      signal: leaving.signal,
    }).catch((error: unknown) => error);
    await sleep(300);
    leaving.abort();
    expect(await left).toBeInstanceOf(Error);
    await sleep(100);
    // Queued in its place rather than refused: it runs once a slot frees.
    const queued = await react();
    expect(queued.status, queued.text).toBe(200);
    expect(queued.body).toEqual({ raw: "done" });
    expect((await Promise.all(running)).map((a) => a.status)).toEqual([200, 200]);
  });

  // A search holds its slot only while it runs; on PostgreSQL a table lock keeps one running for as long as
  // the test needs. (SQLite's reads are synchronous: a blocked one would stop the whole process.)
  it.skipIf(STORE !== "postgres")("runs one search, queues one and answers 503 to the rest", async () => {
    const { key } = await application(server, ["token:search"]);
    const lock = new pg.Client({ connectionString: server.database.env.TESSERA_DATABASE_URL });
    await lock.connect();
    try {
      await lock.query("begin");
      await lock.query("lock table tokens in access exclusive mode");
      const search = () => server.request("POST", "/tokens/search", { key, body: { query: "" } });
      const pending = [search(), search(), search()];
      const refused = await Promise.race(pending);
      expectProblem(refused, 503, { code: "overloaded" });
      expect(refused.body).toEqual(overloadedBody("searches", "/tokens/search"));
      expect(refused.headers.get("retry-after")).toBe("1");
      await lock.query("commit");
      const answers = await Promise.all(pending);
      expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 503]);
    } finally {
      await lock.end();
    }
  });
});

describe.skipIf(STORE_UNAVAILABLE)("load shedding under pressure", () => {
  const overloaded = (what: string, instance: string) => ({
    type: "urn:tessera:problem:overloaded",
    title: "Server overloaded",
    status: 503,
    detail: `The server is overloaded (${what}); retry later.`,
    instance,
  });

  /** Polls until `send` answers `status`; the pressure sample is taken once a second. */
  async function until(status: number, send: () => Promise<TestResponse>): Promise<TestResponse> {
    const deadline = performance.now() + 15_000;
    for (;;) {
      const response = await send();
      if (response.status === status || performance.now() > deadline) return response;
      await sleep(100);
    }
  }

  it("answers API requests 503 with Retry-After beyond TESSERA_MAX_RSS_MB; health probes still answer", async () => {
    const server = await startTestServer({ TESSERA_MAX_RSS_MB: "1" });
    try {
      const shed = await until(503, () => server.request("GET", "/applications"));
      expectProblem(shed, 503, { code: "overloaded" });
      expect(shed.body).toEqual(overloaded("resident memory", "/applications"));
      expect(shed.headers.get("retry-after")).toBe("5");
      expect((await server.request("GET", "/healthz", { key: null })).status).toBe(200);
      expect((await server.request("GET", "/readyz", { key: null })).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it("answers 503 once the event loop has been saturated for seconds, and recovers once it is not", async () => {
    const server = await startTestServer({ TESSERA_MAX_EVENT_LOOP_DELAY_MS: "150" });
    try {
      expect((await server.request("GET", "/applications")).status).toBe(200);
      let saturating = true;
      // Blocks the process's one event loop 400 ms at a time: every timer, the server's included, runs late.
      // Far above the limit, which is itself far above what a busy test host adds.
      const saturation = (async () => {
        const stop = performance.now() + 20_000;
        while (saturating && performance.now() < stop) {
          const busyUntil = performance.now() + 400;
          while (performance.now() < busyUntil) {
            // busy
          }
          await nextTurn();
        }
      })();
      let shed: TestResponse;
      try {
        shed = await until(503, () => server.request("GET", "/applications"));
      } finally {
        saturating = false;
        await saturation;
      }
      expectProblem(shed, 503, { code: "overloaded" });
      expect(shed.body).toEqual(overloaded("event loop delay", "/applications"));
      expect(shed.headers.get("retry-after")).toBe("5");
      expect((await until(200, () => server.request("GET", "/applications"))).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});
