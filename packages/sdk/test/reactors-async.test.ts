import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../server/test/harness.js";
import { startWebhookReceiver, type WebhookReceiver } from "../../server/test/webhook-receiver.js";
import {
  TesseraClient,
  TesseraForbiddenError,
  TesseraNotFoundError,
  TesseraValidationError,
  verifyWebhook,
} from "../src/index.js";
import { lastOf, recordingFetch, type SentRequest } from "./recorder.js";
import { rejectionOf } from "./rejection.js";

describe.skipIf(STORE_UNAVAILABLE)("asynchronous invocations and the webhook secret through the SDK", () => {
  let server: TestServer;
  let receiver: WebhookReceiver;
  let admin: TesseraClient;
  let client: TesseraClient;
  let reactorId: string;
  const sent: SentRequest[] = [];
  const wireBody = () => JSON.parse(lastOf(sent).body ?? "null");

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    server = await startTestServer({ TESSERA_WEBHOOK_ALLOW_PRIVATE: "true", TESSERA_JOB_POLL_MS: "50" });
    admin = new TesseraClient({
      baseUrl: server.url,
      apiKey: server.bootstrapKey,
      fetch: recordingFetch(sent),
    });
    const caller = await admin.applications.create({
      name: "caller",
      type: "private",
      rules: [
        { priority: 1, container: "/", transform: "reveal", permissions: ["token:use", "token:create"] },
      ],
    });
    client = new TesseraClient({ baseUrl: server.url, apiKey: caller.key, fetch: recordingFetch(sent) });
    reactorId = (
      await admin.reactors.create({
        configuration: {},
        name: "echo",
        code: "module.exports = async ({ args }) => ({ raw: { order_id: args.order_id, last_four: args.card.slice(-4) } });",
      })
    ).id;
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it("reactAsync sends callback_url and timeout_ms, and getInvocation shows the outcome as the reactor wrote it", async () => {
    const card = await client.tokens.create({ type: "card_number", data: "4242424242424242" });
    const accepted = await client.reactors.reactAsync(reactorId, {
      args: { card: `{{ ${card.id} }}`, order_id: "o_1" },
      callbackUrl: `${receiver.url}/hooks`,
      timeoutMs: 20_000,
    });
    expect(wireBody()).toEqual({
      args: { card: `{{ ${card.id} }}`, order_id: "o_1" },
      callback_url: `${receiver.url}/hooks`,
      timeout_ms: 20_000,
    });
    expect(accepted).toEqual({ id: expect.any(String), status: "pending" });

    const [hook] = await receiver.waitFor(1);
    const { secret } = await admin.webhooks.getSecret();
    const event = await verifyWebhook<{ data: { result: unknown } }>(hook!.raw, hook!.headers, secret);
    expect(event.data.result).toEqual({ raw: { order_id: "o_1", last_four: "4242" } });

    let invocation = await client.reactors.getInvocation(reactorId, accepted.id);
    for (let i = 0; invocation.delivery?.status !== "delivered" && i < 100; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      invocation = await client.reactors.getInvocation(reactorId, accepted.id);
    }
    expect(invocation).toMatchObject({
      id: accepted.id,
      reactorId,
      status: "completed",
      timeoutMs: 20_000,
      runAttempts: 1,
      // The reactor's own keys stay as it wrote them.
      result: { raw: { order_id: "o_1", last_four: "4242" } },
      delivery: { status: "delivered", attempts: [{ attempt: 1, responseStatus: 200 }] },
    });
  });

  it("raises the server's refusals as SDK errors and never retries", async () => {
    const refused = await rejectionOf(
      client.reactors.reactAsync(reactorId, { callbackUrl: receiver.url, timeoutMs: 5 }),
      TesseraValidationError,
    );
    expect(refused.errors).toEqual({ timeout_ms: ["must be at least 10000"] });
    await rejectionOf(client.reactors.getInvocation(reactorId, crypto.randomUUID()), TesseraNotFoundError);
    await rejectionOf(client.webhooks.getSecret(), TesseraForbiddenError);
  });

  it("webhooks.rotateSecret answers the new secret with the end of the overlap", async () => {
    const before = await admin.webhooks.getSecret();
    const rotated = await admin.webhooks.rotateSecret();
    expect(lastOf(sent)).toMatchObject({ method: "POST", url: `${server.url}/webhooks/secret/rotate` });
    expect(rotated).toEqual({
      secret: expect.stringMatching(/^whsec_/),
      version: before.version + 1,
      createdAt: expect.any(String),
      previousValidUntil: expect.any(String),
    });
    expect(rotated.secret).not.toBe(before.secret);
  });
});
