import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../server/test/harness.js";
import { TesseraClient, TesseraValidationError } from "../src/index.js";
import { lastOf, recordingFetch, type SentRequest } from "./recorder.js";
import { rejectionOf } from "./rejection.js";

describe.skipIf(STORE_UNAVAILABLE)("client.sessions", () => {
  let server: TestServer;
  let admin: TesseraClient;
  const sent: SentRequest[] = [];

  beforeAll(async () => {
    server = await startTestServer();
    admin = new TesseraClient({ baseUrl: server.url, apiKey: server.bootstrapKey });
  });
  afterAll(() => server?.close());

  it("creates with a public key, authorizes with a private one, and the session key reads", async () => {
    const pub = await admin.applications.create({
      name: "page",
      type: "public",
      permissions: ["token:create"],
    });
    const prv = await admin.applications.create({
      name: "backend",
      type: "private",
      rules: [
        { priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read"] },
      ],
    });
    const page = new TesseraClient({ baseUrl: server.url, apiKey: pub.key, fetch: recordingFetch(sent) });
    const backend = new TesseraClient({ baseUrl: server.url, apiKey: prv.key, fetch: recordingFetch(sent) });
    const token = await backend.tokens.create({ type: "token", data: "hello" });

    const session = await page.sessions.create();
    expect(lastOf(sent)).toMatchObject({ method: "POST", body: undefined });
    expect(session).toEqual({
      sessionKey: expect.stringMatching(/^key_ses_/),
      nonce: expect.any(String),
      expiresAt: expect.any(String),
    });

    const expiresAt = new Date(server.clock.now().getTime() + 60_000);
    await expect(
      backend.sessions.authorize({
        nonce: session.nonce,
        expiresAt,
        rules: [
          {
            priority: 1,
            transform: "reveal",
            permissions: ["token:read"],
            conditions: [{ attribute: "id", operator: "equals", value: token.id }],
          },
        ],
      }),
    ).resolves.toBeUndefined();
    expect(JSON.parse(lastOf(sent).body ?? "")).toEqual({
      nonce: session.nonce,
      expires_at: expiresAt.toISOString(),
      rules: [
        {
          priority: 1,
          transform: "reveal",
          permissions: ["token:read"],
          conditions: [{ attribute: "id", operator: "equals", value: token.id }],
        },
      ],
    });
    const browser = new TesseraClient({ baseUrl: server.url, apiKey: session.sessionKey });
    expect((await browser.tokens.get(token.id)).data).toBe("hello");

    const again = await rejectionOf(
      backend.sessions.authorize({ nonce: session.nonce, permissions: ["token:read"] }),
      TesseraValidationError,
    );
    expect(again.errors).toHaveProperty("nonce");
  });
});
