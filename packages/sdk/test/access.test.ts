import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../server/test/harness.js";
import { TesseraClient, TesseraNotFoundError, TesseraValidationError } from "../src/index.js";
import { lastOf, recordingFetch, type SentRequest } from "./recorder.js";
import { rejectionOf } from "./rejection.js";

describe.skipIf(STORE_UNAVAILABLE)("client.access.explain", () => {
  let server: TestServer;
  let admin: TesseraClient;
  const sent: SentRequest[] = [];

  beforeAll(async () => {
    server = await startTestServer();
    admin = new TesseraClient({
      baseUrl: server.url,
      apiKey: server.bootstrapKey,
      fetch: recordingFetch(sent),
    });
  });
  afterAll(() => server?.close());

  it("sends the wire body and answers in camelCase, with the deciding rule and those passed over", async () => {
    const app = await admin.applications.create({
      name: "backend",
      type: "private",
      rules: [
        { priority: 1, container: "/pci/high/", transform: "reveal", permissions: ["token:read"] },
        { priority: 2, container: "/pci/", transform: "mask", permissions: ["token:read", "token:create"] },
      ],
    });
    const writer = new TesseraClient({ baseUrl: server.url, apiKey: app.key });
    const token = await writer.tokens.create({ data: "secret", containers: ["/pci/low/"] });

    const explanation = await admin.access.explain({
      applicationId: app.id,
      tokenId: token.id,
      permission: "token:read",
    });
    expect(JSON.parse(lastOf(sent).body ?? "")).toEqual({
      application_id: app.id,
      token_id: token.id,
      permission: "token:read",
    });
    expect(explanation).toMatchObject({
      application: { id: app.id, name: "backend", type: "private" },
      tokenId: token.id,
      containers: ["/pci/low/"],
      allowed: true,
      transform: "mask",
      decidedBy: { source: "rule", index: 1, priority: 2, container: "/pci/" },
      passedOver: [{ source: "rule", index: 0, reason: "container" }],
    });

    const write = await admin.access.explain({
      applicationId: app.id,
      containers: ["/pci/a/", "/pii/"],
      permission: "token:create",
    });
    expect(write.allowed).toBe(false);
    expect(write.eachContainer).toEqual([
      { container: "/pci/a/", allowed: true, decidedBy: expect.objectContaining({ index: 1 }) },
      { container: "/pii/", allowed: false },
    ]);
  });

  it("throws the validation and not-found errors the server answers", async () => {
    const app = await admin.applications.create({ name: "x", type: "private", permissions: ["token:read"] });
    const invalid = await rejectionOf(
      admin.access.explain({ applicationId: app.id, containers: ["nope"], permission: "token:read" }),
      TesseraValidationError,
    );
    expect(invalid.errors).toHaveProperty(["containers[0]"]);
    await rejectionOf(
      admin.access.explain({ applicationId: app.id, tokenId: "missing-token", permission: "token:read" }),
      TesseraNotFoundError,
    );
  });
});
