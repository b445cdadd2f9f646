import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  expectProblem,
  startTestServer,
  type TestResponse,
  type TestServer,
} from "../../test/harness.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../test/webhook-receiver.js";

interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

/** The samples of a text exposition (label values here never hold quotes or commas). */
function samples(text: string): Sample[] {
  return text
    .split("\n")
    .filter((line) => line.length > 0 && !line.startsWith("#"))
    .map((line) => {
      const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (match === null) throw new Error(`not a sample line: ${line}`);
      const labels = Object.fromEntries(
        (match[2] ?? "")
          .split(",")
          .filter((pair) => pair.length > 0)
          .map((pair) => {
            const [key, quoted] = pair.split("=") as [string, string];
            return [key, JSON.parse(quoted) as string];
          }),
      );
      return { name: match[1]!, labels, value: Number(match[3]) };
    });
}

/** The one sample of `name` whose labels include `labels`; undefined when there is none. */
function valueOf(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = samples(text).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

describe.skipIf(STORE_UNAVAILABLE)("GET /metrics", () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  /** Creates, reads and uses tokens everywhere. */
  let user: string;

  async function scrape(): Promise<string> {
    const response = await server.request("GET", "/metrics", { key: null });
    expect(response.status, response.text).toBe(200);
    return response.text;
  }

  async function created(path: string, body: unknown, key?: string): Promise<any> {
    const response = await server.request("POST", path, { body, ...(key !== undefined && { key }) });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  const reactor = async (code: string): Promise<string> =>
    (await created("/reactors", { name: "measured", code, configuration: {} })).id;

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({
      TESSERA_REACTOR_TIMEOUT_MS: "1500",
      TESSERA_WEBHOOK_ALLOW_PRIVATE: "true",
      TESSERA_JOB_POLL_MS: "50",
      TESSERA_WEBHOOK_RETRY_BASE_MS: "600000",
    });
    user = (
      await created("/applications", {
        name: "user",
        type: "private",
        permissions: ["token:create", "token:read", "token:use"],
      })
    ).key;
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it("is served without a key on loopback, in the Prometheus text format, with every family promised", async () => {
    const response = await server.request("GET", "/metrics", { key: null });
    expect(response.status, response.text).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    const types = Object.fromEntries(
      [...response.text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1], m[2]]),
    );
    expect(types).toMatchObject({
      tessera_http_request_duration_seconds: "histogram",
      tessera_reactor_invocations_total: "counter",
      tessera_reactor_cold_starts_total: "counter",
      tessera_reactor_workers: "gauge",
      tessera_reactor_workers_busy: "gauge",
      tessera_reactor_workers_max: "gauge",
      tessera_invocation_backlog: "gauge",
      tessera_db_connections: "gauge",
      tessera_db_waiting: "gauge",
      process_cpu_seconds_total: "counter",
      process_resident_memory_bytes: "gauge",
      nodejs_eventloop_lag_seconds: "gauge",
    });
    const text = response.text;
    // Before any invocation: the pool has not started, and every outcome already has its series.
    expect(valueOf(text, "tessera_reactor_workers")).toBe(0);
    expect(valueOf(text, "tessera_reactor_workers_busy")).toBe(0);
    expect(valueOf(text, "tessera_reactor_workers_max")).toBe(32);
    expect(valueOf(text, "tessera_reactor_cold_starts_total")).toBe(0);
    for (const outcome of ["returned", "threw", "timed-out", "crashed", "pool-exhausted", "start-failed"]) {
      expect(valueOf(text, "tessera_reactor_invocations_total", { outcome })).toBe(0);
    }
    expect(valueOf(text, "tessera_invocation_backlog", { queue: "runs" })).toBe(0);
    expect(valueOf(text, "tessera_invocation_backlog", { queue: "webhooks" })).toBe(0);
    // SQLite: the writer and the reader; PostgreSQL: the pool's clients, at least the one that just answered.
    const open = valueOf(text, "tessera_db_connections", { state: "open" });
    if (STORE === "sqlite") expect(open).toBe(2);
    else expect(open).toBeGreaterThanOrEqual(1);
    expect(valueOf(text, "tessera_db_connections", { state: "idle" })).toBeLessThanOrEqual(open!);
    expect(Number.isInteger(valueOf(text, "tessera_db_waiting"))).toBe(true);
  });

  it("counts requests by method, route pattern and status, never by URL", async () => {
    const route = { method: "GET", route: "/tokens/:id", status: "404" };
    const count = (text: string) => valueOf(text, "tessera_http_request_duration_seconds_count", route) ?? 0;
    const tenant = (await server.request("GET", "/tenants/self")).body.id as string;
    const token = await created("/tokens", { type: "token", data: "secret-value" }, user);
    const before = await scrape();

    const missing = `missing-${randomBytes(8).toString("hex")}`;
    expectProblem(await server.request("GET", `/tokens/${missing}`, { key: user }), 404);
    expectProblem(await server.request("GET", `/tokens/${missing}-again?type=token`, { key: user }), 404);
    expect((await server.request("GET", `/tokens/${token.id}`, { key: user })).status).toBe(200);
    const probe = `/probe-${randomBytes(8).toString("hex")}`;
    expectProblem(await server.request("GET", probe, { key: null }), 404);
    expectProblem(await server.request("GET", "/tokens", { key: null }), 401);
    expectProblem(await server.request("GET", "/tokens/%zz", { key: null }), 400);

    const after = await scrape();
    expect(count(after) - count(before)).toBe(2);
    const ok = { method: "GET", route: "/tokens/:id", status: "200" };
    expect(valueOf(after, "tessera_http_request_duration_seconds_count", ok)).toBe(1);
    // A histogram: cumulative buckets, the last one (+Inf) equal to the count.
    expect(valueOf(after, "tessera_http_request_duration_seconds_bucket", { ...ok, le: "+Inf" })).toBe(1);
    expect(valueOf(after, "tessera_http_request_duration_seconds_sum", ok)).toBeGreaterThan(0);
    expect(
      valueOf(after, "tessera_http_request_duration_seconds_count", {
        method: "GET",
        route: "unmatched",
        status: "404",
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      valueOf(after, "tessera_http_request_duration_seconds_count", {
        method: "GET",
        route: "/tokens",
        status: "401",
      }),
    ).toBe(1);
    // The router refused the malformed URL before matching it to a route.
    expect(
      valueOf(after, "tessera_http_request_duration_seconds_count", {
        method: "GET",
        route: "unmatched",
        status: "400",
      }),
    ).toBe(1);
    // The previous scrape is counted under its own route.
    expect(
      valueOf(after, "tessera_http_request_duration_seconds_count", {
        method: "GET",
        route: "/metrics",
        status: "200",
      }),
    ).toBeGreaterThanOrEqual(1);

    for (const secret of [missing, probe, token.id, tenant, "secret-value", "type=token"]) {
      expect(after).not.toContain(secret);
    }
    const routes = new Set(
      samples(after)
        .filter((s) => s.name === "tessera_http_request_duration_seconds_count")
        .map((s) => s.labels.route),
    );
    for (const seen of routes) expect(seen === "unmatched" || seen!.startsWith("/")).toBe(true);
  });

  it("counts reactor outcomes and cold starts, and shows the worker pool", async () => {
    const before = await scrape();
    const counter = (text: string, outcome: string) =>
      valueOf(text, "tessera_reactor_invocations_total", { outcome })!;
    const cold = (text: string) => valueOf(text, "tessera_reactor_cold_starts_total")!;

    const quick = await reactor("module.exports = async () => ({ raw: { ok: true } });");
    for (let i = 0; i < 2; i++) {
      const response = await server.request("POST", `/reactors/${quick}/react`, {
        key: user,
        body: { args: {} },
      });
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ raw: { ok: true } });
    }
    const stuck = await reactor("module.exports = async () => { for (;;) {} };");
    expectProblem(await server.request("POST", `/reactors/${stuck}/react`, { key: user, body: {} }), 504, {
      code: "reactor-timeout",
    });
    const thrower = await reactor(`
      const { BadRequestError } = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");
      module.exports = async () => { throw new BadRequestError({ card: ["expired"] }); };`);
    expectProblem(await server.request("POST", `/reactors/${thrower}/react`, { key: user, body: {} }), 400);

    const after = await scrape();
    expect(counter(after, "returned") - counter(before, "returned")).toBe(2);
    expect(counter(after, "timed-out") - counter(before, "timed-out")).toBe(1);
    expect(counter(after, "threw") - counter(before, "threw")).toBe(1);
    // The first invocation of each reactor loads it; the second of `quick` finds it loaded.
    expect(cold(after) - cold(before)).toBe(3);
    // `quick` and `thrower` are loaded (the stuck one was killed), beside one spare: at most 32, none busy.
    const workers = valueOf(after, "tessera_reactor_workers")!;
    expect(workers).toBeGreaterThanOrEqual(2);
    expect(workers).toBeLessThanOrEqual(32);
    expect(valueOf(after, "tessera_reactor_workers_busy")).toBe(0);
    expect(
      valueOf(after, "tessera_http_request_duration_seconds_count", {
        method: "POST",
        route: "/reactors/:id/react",
        status: "504",
      }),
    ).toBe(1);
  });

  it("shows the webhook backlog: a delivery that keeps failing stays queued", async () => {
    receiver.respondWith([], 500);
    const id = await reactor("module.exports = async () => ({ raw: {} });");
    const accepted = await server.request("POST", `/reactors/${id}/react`, {
      key: user,
      body: { callback_url: `${receiver.url}/hook` },
    });
    expect(accepted.status, accepted.text).toBe(202);
    await receiver.waitFor(1);

    let text = "";
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      text = await scrape();
      if (valueOf(text, "tessera_invocation_backlog", { queue: "runs" }) === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // The run is over; its webhook waits for a retry ten minutes away.
    expect(valueOf(text, "tessera_invocation_backlog", { queue: "runs" })).toBe(0);
    expect(valueOf(text, "tessera_invocation_backlog", { queue: "webhooks" })).toBe(1);
    const shown = await server.request("GET", `/reactors/${id}/invocations/${accepted.body.id}`, {
      key: user,
    });
    expect(shown.body).toMatchObject({ status: "completed", delivery: { status: "pending" } });
  });
});

describe.skipIf(STORE_UNAVAILABLE)("access to /metrics", () => {
  const token = randomBytes(24).toString("base64url");
  let guarded: TestServer;
  let off: TestServer;

  beforeAll(async () => {
    guarded = await startTestServer({ TESSERA_METRICS_TOKEN: token });
    off = await startTestServer({ TESSERA_METRICS: "false" });
  });
  afterAll(async () => {
    await guarded?.close();
    await off?.close();
  });

  it("requires the bearer token when one is set, answering 401 problems otherwise", async () => {
    for (const authorization of [undefined, `Bearer ${token}x`, `Basic ${token}`, token]) {
      const response: TestResponse = await guarded.request("GET", "/metrics", {
        key: null,
        ...(authorization !== undefined && { headers: { authorization } }),
      });
      expectProblem(response, 401, { code: "unauthenticated", detail: /bearer token/ });
      expect(response.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
      expect(response.text).not.toContain(token);
    }
    const allowed = await guarded.request("GET", "/metrics", {
      key: null,
      headers: { authorization: `Bearer ${token}` },
    });
    expect(allowed.status, allowed.text).toBe(200);
    expect(allowed.text).toContain("# TYPE tessera_http_request_duration_seconds histogram");
    // The refused scrapes were counted like any other request.
    expect(
      valueOf(allowed.text, "tessera_http_request_duration_seconds_count", {
        method: "GET",
        route: "/metrics",
        status: "401",
      }),
    ).toBe(4);
  });

  it("is not there at all when turned off", async () => {
    expectProblem(await off.request("GET", "/metrics", { key: null }), 404, { code: "not-found" });
    expect((await off.request("GET", "/healthz", { key: null })).status).toBe(200);
  });
});
