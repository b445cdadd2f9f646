import { verifyWebhook } from "@tessera/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../test/webhook-receiver.js";

const HOUR = 3_600_000;
const PRIVATE = "must not point to a private, loopback or link-local address";

describe.skipIf(STORE_UNAVAILABLE)("the webhook signing secret", () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let caller: { id: string; key: string };
  let reactorId: string;

  async function created(path: string, body: unknown, key?: string) {
    const response = await server.request("POST", path, { body, ...(key !== undefined && { key }) });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  /** One asynchronous invocation, and the webhook it produced. */
  async function webhook() {
    const before = receiver.received.length;
    const response = await server.request("POST", `/reactors/${reactorId}/react`, {
      key: caller.key,
      body: { callback_url: receiver.url },
    });
    expect(response.status, response.text).toBe(202);
    return (await receiver.waitFor(before + 1))[before]!;
  }

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({ TESSERA_WEBHOOK_ALLOW_PRIVATE: "true", TESSERA_JOB_POLL_MS: "50" });
    caller = await created("/applications", { name: "caller", type: "private", permissions: ["token:use"] });
    reactorId = (
      await created("/reactors", {
        configuration: {},
        name: "hook",
        code: "module.exports = async () => ({ raw: {} });",
      })
    ).id;
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it("is the tenant's own, in the whsec_ form, and verifies what the server sends", async () => {
    const response = await server.request("GET", "/webhooks/secret");
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      version: 1,
      created_at: expect.any(String),
    });
    const hook = await webhook();
    await verifyWebhook(hook.raw, hook.headers, response.body.secret);

    const tenant = await created("/tenants", { name: "second tenant" });
    const theirs = await server.request("GET", "/webhooks/secret", { key: tenant.application.key });
    expect(theirs.status, theirs.text).toBe(200);
    expect(theirs.body.secret).not.toBe(response.body.secret);
    await expect(verifyWebhook(hook.raw, hook.headers, theirs.body.secret)).rejects.toThrow();
  });

  it("rotates: both secrets sign for a day, then only the new one", async () => {
    const old = (await server.request("GET", "/webhooks/secret")).body.secret as string;
    const rotated = await server.request("POST", "/webhooks/secret/rotate");
    expect(rotated.status, rotated.text).toBe(200);
    expect(rotated.body).toEqual({
      secret: expect.stringMatching(/^whsec_/),
      version: 2,
      created_at: server.clock.now().toISOString(),
      previous_valid_until: new Date(server.clock.now().getTime() + 24 * HOUR).toISOString(),
    });
    expect(rotated.body.secret).not.toBe(old);
    expect((await server.request("GET", "/webhooks/secret")).body).toEqual(rotated.body);

    const during = await webhook();
    expect(String(during.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    await verifyWebhook(during.raw, during.headers, old);
    await verifyWebhook(during.raw, during.headers, rotated.body.secret);

    server.clock.advance(24 * HOUR + 1);
    const after = await webhook();
    expect(String(after.headers["webhook-signature"]).split(" ")).toHaveLength(1);
    // Verification compares against the receiver's clock; the server's clock was moved a day on.
    const lenient = { toleranceSeconds: 2 * 24 * 3600 };
    await verifyWebhook(after.raw, after.headers, rotated.body.secret, lenient);
    await expect(verifyWebhook(after.raw, after.headers, old, lenient)).rejects.toThrow();
    const shown = await server.request("GET", "/webhooks/secret");
    expect(shown.body.previous_valid_until).toBeUndefined();
  });

  it("is for management keys holding webhook:read and webhook:update only", async () => {
    for (const [method, path] of [
      ["GET", "/webhooks/secret"],
      ["POST", "/webhooks/secret/rotate"],
    ] as const) {
      expectProblem(await server.request(method, path, { key: null }), 401, { code: "unauthenticated" });
      expectProblem(await server.request(method, path, { key: caller.key }), 403, { code: "forbidden" });
    }
    const reader = await created("/applications", {
      name: "reads the secret",
      type: "management",
      permissions: ["webhook:read"],
    });
    expect((await server.request("GET", "/webhooks/secret", { key: reader.key })).status).toBe(200);
    expectProblem(await server.request("POST", "/webhooks/secret/rotate", { key: reader.key }), 403, {
      detail: /webhook:update/,
    });
    expectProblem(
      await server.request("POST", "/applications", {
        body: { name: "x", type: "private", permissions: ["webhook:read"] },
      }),
      400,
    );
  });
});

describe.skipIf(STORE_UNAVAILABLE)("callback URLs by default", () => {
  let server: TestServer;
  let caller: string;
  let reactorId: string;

  beforeAll(async () => {
    server = await startTestServer();
    const app = await server.request("POST", "/applications", {
      body: { name: "caller", type: "private", permissions: ["token:use"] },
    });
    caller = app.body.key;
    const reactor = await server.request("POST", "/reactors", {
      body: { configuration: {}, name: "r", code: "module.exports = async () => ({});" },
    });
    reactorId = reactor.body.id;
  });
  afterAll(() => server?.close());

  it.each([
    "http://127.0.0.1:9/hook",
    "http://localhost:9/hook",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.1/",
    "http://192.168.0.1/",
    "http://[::1]:9/",
    "http://0x7f000001/",
    "http://[::ffff:127.0.0.1]/",
  ])("refuses %s as a private target", async (url) => {
    expectProblem(
      await server.request("POST", `/reactors/${reactorId}/react`, {
        key: caller,
        body: { callback_url: url },
      }),
      400,
      { code: "validation-failed", errors: { callback_url: [PRIVATE] } },
    );
  });
});
