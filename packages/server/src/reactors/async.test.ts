import { verifyWebhook } from "@tessera/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STORE_UNAVAILABLE,
  expectProblem,
  startTestServer,
  type TestResponse,
  type TestServer,
} from "../../test/harness.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../test/webhook-receiver.js";

const CARD = "4242424242424242";
const HOUR = 3_600_000;

const ECHO = "module.exports = async ({ args }) => ({ raw: { args } });";

describe.skipIf(STORE_UNAVAILABLE)("asynchronous reactor invocations", () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  /** Uses /pci/ tokens. */
  let caller: { id: string; key: string };
  /** Another private Application of the tenant with token:use everywhere. */
  let other: { id: string; key: string };
  let card: { id: string };
  let secret: string;

  async function created(method: string, path: string, body: unknown, key?: string) {
    const response = await server.request(method, path, { body, ...(key !== undefined && { key }) });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  const reactor = async (code: string): Promise<string> =>
    (await created("POST", "/reactors", { name: "async", code, configuration: {} })).id;

  const react = (id: string, body: unknown, key = caller.key) =>
    server.request("POST", `/reactors/${id}/react`, { key, body });

  const invocation = (reactorId: string, id: string, key = caller.key) =>
    server.request("GET", `/reactors/${reactorId}/invocations/${id}`, { key });

  /** Polls the invocation until `done` holds for it. */
  async function invocationWhen(
    reactorId: string,
    id: string,
    done: (body: any) => boolean,
    timeoutMs = 15_000,
  ): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    let last: TestResponse | undefined;
    while (Date.now() < deadline) {
      last = await invocation(reactorId, id);
      expect(last.status, last.text).toBe(200);
      if (done(last.body)) return last.body;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`the invocation did not get there: ${last?.text}`);
  }

  /** Invokes asynchronously and answers the accepted invocation's id. */
  async function accepted(reactorId: string, body: Record<string, unknown>): Promise<string> {
    const response = await react(reactorId, { callback_url: `${receiver.url}/hook`, ...body });
    expect(response.status, response.text).toBe(202);
    expect(Object.keys(response.body).sort()).toEqual(["id", "status"]);
    expect(response.body.status).toBe("pending");
    return response.body.id as string;
  }

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({
      TESSERA_WEBHOOK_ALLOW_PRIVATE: "true",
      TESSERA_JOB_POLL_MS: "50",
      TESSERA_WEBHOOK_RETRY_BASE_MS: "60000",
    });
    caller = await created("POST", "/applications", {
      name: "caller",
      type: "private",
      rules: [
        {
          priority: 1,
          container: "/pci/",
          transform: "reveal",
          permissions: ["token:use", "token:create", "token:read"],
        },
      ],
    });
    other = await created("POST", "/applications", {
      name: "other",
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:use"] }],
    });
    card = await created(
      "POST",
      "/tokens",
      { type: "card_number", data: CARD, containers: ["/pci/"] },
      caller.key,
    );
    const current = await server.request("GET", "/webhooks/secret");
    expect(current.status, current.text).toBe(200);
    secret = current.body.secret;
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it("answers 202 at once, runs the reactor with detokenized args and POSTs a signed Standard Webhooks message", async () => {
    const id = await reactor(ECHO);
    const before = receiver.received.length;
    const invocationId = await accepted(id, { args: { card: `{{ ${card.id} }}`, note: "x" } });

    const [hook] = (await receiver.waitFor(before + 1)).slice(before);
    expect(hook!.path).toBe("/hook");
    expect(hook!.headers["content-type"]).toBe("application/json");
    expect(hook!.headers["webhook-id"]).toBe(`msg_${invocationId}`);
    expect(hook!.headers["webhook-timestamp"]).toMatch(/^\d+$/);
    expect(hook!.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    // The SDK's verifier is a separate implementation of Standard Webhooks: it must accept what the server signs.
    const verified = await verifyWebhook(hook!.raw, hook!.headers, secret);
    expect(verified).toEqual(hook!.body);
    expect(hook!.body).toEqual({
      type: "reactor.invocation.completed",
      timestamp: expect.any(String),
      data: {
        id: invocationId,
        reactor_id: id,
        status: "completed",
        created_at: expect.any(String),
        started_at: expect.any(String),
        finished_at: hook!.body.timestamp,
        result: { raw: { args: { card: CARD, note: "x" } } },
      },
    });
    await expect(
      verifyWebhook(hook!.raw, hook!.headers, `whsec_${Buffer.alloc(32).toString("base64")}`),
    ).rejects.toThrow();

    const shown = await invocationWhen(id, invocationId, (body) => body.delivery?.status === "delivered");
    expect(shown).toEqual({
      id: invocationId,
      reactor_id: id,
      status: "completed",
      callback_url: `${receiver.url}/hook`,
      timeout_ms: 10_000,
      run_attempts: 1,
      created_at: expect.any(String),
      started_at: expect.any(String),
      finished_at: expect.any(String),
      result: { raw: { args: { card: CARD, note: "x" } } },
      delivery: {
        status: "delivered",
        delivered_at: expect.any(String),
        attempts: [
          {
            attempt: 1,
            attempted_at: expect.any(String),
            duration_ms: expect.any(Number),
            response_status: 200,
          },
        ],
      },
    });
  });

  it("delivers what the reactor threw as a failed invocation carrying the problem it would have answered", async () => {
    const id = await reactor(`
      const { BadRequestError } = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");
      module.exports = async () => { throw new BadRequestError({ card: ["expired"] }); };`);
    const before = receiver.received.length;
    const invocationId = await accepted(id, {});
    const [hook] = (await receiver.waitFor(before + 1)).slice(before);
    expect(hook!.body.type).toBe("reactor.invocation.failed");
    expect(hook!.body.data).toMatchObject({ id: invocationId, status: "failed" });
    expect(hook!.body.data.error).toEqual({
      type: "urn:tessera:problem:reactor-error",
      title: "Reactor error",
      status: 400,
      detail: "Bad Request",
      errors: { card: ["expired"] },
    });
    expect(hook!.body.data.result).toBeUndefined();
    const shown = await invocationWhen(id, invocationId, (body) => body.delivery?.status === "delivered");
    expect(shown.status).toBe("failed");
    expect(shown.error.status).toBe(400);
  });

  it("delivers a reactor's custom HTTP answer as its response, and refuses one Tessera would not send", async () => {
    const id = await reactor(`
      const { CustomHttpResponseError } = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");
      module.exports = async ({ args }) => {
        throw new CustomHttpResponseError(args.hijack
          ? { status: 101, headers: { "Set-Cookie": "s=1" }, body: {} }
          : { status: 201, headers: { "X-A": "b" }, body: { made: 1 } });
      };`);
    const before = receiver.received.length;
    await accepted(id, {});
    const [hook] = (await receiver.waitFor(before + 1)).slice(before);
    expect(hook!.body.type).toBe("reactor.invocation.completed");
    expect(hook!.body.data.response).toEqual({ status: 201, headers: { "X-A": "b" }, body: { made: 1 } });

    await accepted(id, { args: { hijack: true } });
    const [refused] = (await receiver.waitFor(before + 2)).slice(before + 1);
    expect(refused!.body.type).toBe("reactor.invocation.failed");
    expect(refused!.body.data.response).toBeUndefined();
    expect(refused!.body.data.error).toMatchObject({
      type: "urn:tessera:problem:reactor-error",
      status: 500,
      detail: "The reactor's custom response was refused",
      errors: {
        status: ["must be a final status from 200 to 599 and not a redirect (3xx); got 101"],
        "headers.Set-Cookie": ["is not a header a reactor may set"],
      },
    });
  });

  it("stops a reactor at its timeout_ms and delivers a reactor-timeout problem", async () => {
    const id = await reactor("module.exports = async () => { while (true) {} };");
    const before = receiver.received.length;
    const started = Date.now();
    await accepted(id, { timeout_ms: 10_000 });
    const [hook] = (await receiver.waitFor(before + 1, 30_000)).slice(before);
    expect(Date.now() - started).toBeGreaterThanOrEqual(10_000);
    expect(hook!.body.data.status).toBe("failed");
    expect(hook!.body.data.error).toMatchObject({
      type: "urn:tessera:problem:reactor-timeout",
      status: 504,
      detail: "The reactor did not finish within 10000 ms.",
    });
  }, 40_000);

  it("retries a receiver that fails, with backoff, recording every attempt", async () => {
    const id = await reactor(ECHO);
    receiver.respondWith([500]);
    const before = receiver.received.length;
    const invocationId = await accepted(id, {});
    await receiver.waitFor(before + 1);
    const waiting = await invocationWhen(id, invocationId, (body) => body.delivery?.attempts.length === 1);
    expect(waiting.delivery).toMatchObject({
      status: "pending",
      attempts: [{ attempt: 1, response_status: 500 }],
    });
    // The first retry comes after 30–60 s (base 60 s, equal jitter) of the server's clock, not before.
    const next = new Date(waiting.delivery.next_attempt_at).getTime() - server.clock.now().getTime();
    expect(next).toBeGreaterThanOrEqual(30_000);
    expect(next).toBeLessThanOrEqual(60_000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.received.length).toBe(before + 1);

    server.clock.advance(61_000);
    const [first, second] = (await receiver.waitFor(before + 2)).slice(before);
    // The same message: its id and body stay, its timestamp and signature are those of the new attempt.
    expect(second!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);
    expect(second!.raw).toBe(first!.raw);
    await verifyWebhook(second!.raw, second!.headers, secret);
    const delivered = await invocationWhen(id, invocationId, (body) => body.delivery?.status === "delivered");
    expect(delivered.delivery.attempts.map((a: any) => a.response_status)).toEqual([500, 200]);
  });

  it("gives up once the 24-hour retry window has passed, and says so", async () => {
    const id = await reactor(ECHO);
    receiver.respondWith([], 503);
    try {
      const before = receiver.received.length;
      const invocationId = await accepted(id, {});
      await receiver.waitFor(before + 1);
      await invocationWhen(id, invocationId, (body) => body.delivery?.attempts.length === 1);
      server.clock.advance(25 * HOUR);
      const failed = await invocationWhen(id, invocationId, (body) => body.delivery?.status === "failed");
      expect(failed.delivery.attempts.map((a: any) => a.response_status)).toEqual([503, 503]);
      expect(failed.delivery.next_attempt_at).toBeUndefined();
      expect(failed.status).toBe("completed");
    } finally {
      receiver.respondWith([], 200);
      // A 503 also paused the receiver's destination (docs/reactors.md#fairness) for a minute or two of the
      // server's clock: past it, the next tests' webhooks to the same receiver go at once.
      server.clock.advance(HOUR);
    }
  });

  it("stops retrying at 410 Gone and records the delivery as failed", async () => {
    const id = await reactor(ECHO);
    receiver.respondWith([410]);
    const before = receiver.received.length;
    const invocationId = await accepted(id, {});
    await receiver.waitFor(before + 1);
    const failed = await invocationWhen(id, invocationId, (body) => body.delivery?.status === "failed");
    expect(failed.delivery.attempts).toEqual([expect.objectContaining({ attempt: 1, response_status: 410 })]);
    expect(failed.delivery.next_attempt_at).toBeUndefined();
    expect(failed.status).toBe("completed");
    // No retry, however long one waits.
    server.clock.advance(HOUR);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.received.length).toBe(before + 1);
  });

  it("records a receiver that cannot be reached as an attempt with the reason", async () => {
    const id = await reactor(ECHO);
    const gone = await startWebhookReceiver();
    await gone.close();
    const response = await react(id, { callback_url: `${gone.url}/nobody` });
    expect(response.status, response.text).toBe(202);
    const shown = await invocationWhen(id, response.body.id, (body) => body.delivery?.attempts.length === 1);
    expect(shown.delivery.status).toBe("pending");
    expect(shown.delivery.attempts[0].response_status).toBeUndefined();
    expect(shown.delivery.attempts[0].error).toMatch(/ECONNREFUSED/);
  });

  it("loses nothing across a restart: a run under way is run again, a pending webhook is delivered", async () => {
    const slow = await reactor(
      "module.exports = async ({ args }) => { await new Promise((r) => setTimeout(r, 1500)); return { raw: args }; };",
    );
    const echo = await reactor(ECHO);
    receiver.respondWith([503]);
    const before = receiver.received.length;
    const undelivered = await accepted(echo, { args: { n: 1 } });
    await invocationWhen(echo, undelivered, (body) => body.delivery?.attempts.length === 1);
    const running = await accepted(slow, { args: { n: 2 } });
    await invocationWhen(slow, running, (body) => body.status === "running");

    await server.restart();
    const ran = await invocationWhen(slow, running, (body) => body.status === "completed");
    expect(ran).toMatchObject({ run_attempts: 1, result: { raw: { n: 2 } } });
    // Only now, for the webhooks (the 503 paused their destination): jumping the clock while the new instance
    // ran the invocation again would end that run's lease, and a loaded machine sometimes claimed it before the
    // jump (run_attempts 2).
    server.clock.advance(HOUR);
    await invocationWhen(slow, running, (body) => body.delivery?.status === "delivered");
    const delivered = await invocationWhen(
      echo,
      undelivered,
      (body) => body.delivery?.status === "delivered",
    );
    expect(delivered.delivery.attempts.map((a: any) => a.response_status)).toEqual([503, 200]);
    const ids = receiver.received.slice(before).map((hook) => hook.headers["webhook-id"]);
    expect(ids.filter((value) => value === `msg_${running}`)).toHaveLength(1);
    expect(ids.filter((value) => value === `msg_${undelivered}`)).toHaveLength(2);
  });

  it("takes callbackUrl, the spelling Basis Theory's JavaScript SDK sends, as callback_url", async () => {
    const id = await reactor(ECHO);
    const before = receiver.received.length;
    const response = await react(id, { args: { n: 1 }, callbackUrl: `${receiver.url}/camel` });
    expect(response.status, response.text).toBe(202);
    const [hook] = (await receiver.waitFor(before + 1)).slice(before);
    expect(hook!.path).toBe("/camel");
    expect(hook!.body.data).toMatchObject({ id: response.body.id, result: { raw: { args: { n: 1 } } } });
    expectProblem(await react(id, { callbackUrl: "ftp://example.com/hook" }), 400, {
      errors: { callback_url: ["must be an http or https URL"] },
    });
  });

  it("refuses bad invocations before storing anything, each with its field", async () => {
    const id = await reactor(ECHO);
    const hook = `${receiver.url}/hook`;
    expectProblem(await react(id, { callback_url: hook, timeout_ms: 9_999 }), 400, {
      code: "validation-failed",
      errors: { timeout_ms: ["must be at least 10000"] },
    });
    expectProblem(await react(id, { callback_url: hook, timeout_ms: 210_001 }), 400, {
      errors: { timeout_ms: ["must be at most 210000"] },
    });
    expectProblem(await react(id, { callback_url: hook, timeout_ms: 10_000.5 }), 400, {
      errors: { timeout_ms: ["must be an integer or null"] },
    });
    expectProblem(await react(id, { timeout_ms: 20_000 }), 400, {
      errors: { timeout_ms: ["is supported only for asynchronous invocations (with callback_url)"] },
    });
    for (const [url, message] of [
      ["not a url", "must be an absolute http or https URL"],
      ["ftp://example.com/hook", "must be an http or https URL"],
      ["https://user:pw@example.com/hook", "must not contain credentials"],
    ]) {
      expectProblem(await react(id, { callback_url: url }), 400, { errors: { callback_url: [message!] } });
    }
    expectProblem(await react(id, { callback_url: "" }), 400, {
      errors: { callback_url: ["must not be empty"] },
    });
    expectProblem(
      await react(id, { callback_url: hook, args: { t: "{{ 00000000-0000-4000-8000-000000000000 }}" } }),
      400,
    );
    expectProblem(await react(crypto.randomUUID(), { callback_url: hook }), 404);
    const before = receiver.received.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.received.length).toBe(before);
  });

  it("requires token:use for the reactor and for every detokenized token's container", async () => {
    const id = await reactor(ECHO);
    const hook = `${receiver.url}/hook`;
    const outsider = await created("POST", "/applications", {
      name: "outsider",
      type: "private",
      rules: [{ priority: 1, container: "/pii/", transform: "reveal", permissions: ["token:use"] }],
    });
    expectProblem(
      await react(id, { callback_url: hook, args: { c: `{{ ${card.id} }}` } }, outsider.key),
      403,
    );
    const reader = await created("POST", "/applications", {
      name: "r",
      type: "private",
      permissions: ["token:read"],
    });
    expectProblem(await react(id, { callback_url: hook }, reader.key), 403, { code: "forbidden" });
    expectProblem(await react(id, { callback_url: hook }, null as unknown as string), 401);
  });

  it("shows an invocation only to the Application that made it, under its own reactor", async () => {
    const id = await reactor(ECHO);
    const invocationId = await accepted(id, { args: { card: `{{ ${card.id} }}` } });
    await invocationWhen(id, invocationId, (body) => body.delivery !== undefined);
    expectProblem(await invocation(id, invocationId, other.key), 404, { code: "not-found" });
    expectProblem(await invocation(await reactor(ECHO), invocationId), 404);
    expectProblem(await invocation(id, crypto.randomUUID()), 404);
    expectProblem(await invocation(id, "not-a-uuid"), 400);
    expectProblem(await server.request("GET", `/reactors/${id}/invocations/${invocationId}`), 403);
  });

  it("keeps the arguments and the outcome sealed at rest", async () => {
    const id = await reactor(ECHO);
    const invocationId = await accepted(id, { args: { card: `{{ ${card.id} }}` } });
    await invocationWhen(id, invocationId, (body) => body.delivery?.status === "delivered");
    const store = server.database.open();
    try {
      const rows = await store.db.selectFrom("reactor_invocations").selectAll().execute();
      expect(rows.length).toBeGreaterThan(0);
      for (const row of rows) {
        expect(row.args).toBeNull();
        expect(JSON.stringify(row)).not.toContain(CARD);
        expect(row.outcome === null || /^[A-Za-z0-9+/]+=*$/.test(row.outcome)).toBe(true);
      }
    } finally {
      await store.close();
    }
  });
});
