import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../server/test/harness.js";
import { TesseraClient, TesseraForbiddenError, TesseraValidationError } from "../src/index.js";
import { lastOf, recordingFetch, type SentRequest } from "./recorder.js";
import { rejectionOf } from "./rejection.js";

describe.skipIf(STORE_UNAVAILABLE)("logs against the real server", () => {
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

  it("lists entries in camelCase with their recorded details untouched, filtered as asked", async () => {
    const reactor = await admin.reactors.create({
      name: "r",
      code: "module.exports = async () => ({});",
      configuration: { API_KEY: "sk_test_1" },
    });
    const since = new Date(server.clock.now().getTime() - 1);
    const page = await admin.logs.list({
      entityType: "reactor",
      entityId: reactor.id,
      startDate: since,
      size: 5,
    });
    expect(new URL(lastOf(sent).url).searchParams.toString()).toBe(
      `entity_type=reactor&entity_id=${reactor.id}&start_date=${encodeURIComponent(since.toISOString())}&size=5`,
    );
    expect(page.pagination).toEqual({ totalItems: 1, pageNumber: 1, pageSize: 5, totalPages: 1 });
    expect(page.data[0]).toMatchObject({
      tenantId: reactor.tenantId,
      action: "reactor.create",
      entityType: "reactor",
      entityId: reactor.id,
      // The recorded details keep the server's own names.
      details: { name: "r", configuration_names: ["API_KEY"], application_id: null },
      createdAt: expect.any(String),
    });

    const all = [];
    for await (const entry of admin.logs.listAll({ action: "reactor.create", size: 1 })) all.push(entry);
    expect(all.map((entry) => entry.entityId)).toEqual([reactor.id]);
  });

  it("raises the server's refusals", async () => {
    const error = await rejectionOf(admin.logs.list({ startDate: "yesterday" }), TesseraValidationError);
    expect(error.errors).toEqual({ start_date: ["must be a valid date-time"] });
    const app = await admin.applications.create({ name: "p", type: "private", permissions: ["token:read"] });
    const other = new TesseraClient({ baseUrl: server.url, apiKey: app.key });
    await rejectionOf(other.logs.list(), TesseraForbiddenError);
  });
});
