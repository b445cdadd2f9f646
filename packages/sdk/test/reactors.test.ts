import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../server/test/harness.js";
import {
  TesseraClient,
  TesseraForbiddenError,
  TesseraNotFoundError,
  TesseraValidationError,
  type ApplicationWithKey,
  type Reactor,
} from "../src/index.js";
import { lastOf, recordingFetch, type SentRequest } from "./recorder.js";
import { rejectionOf } from "./rejection.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const CODE = "module.exports = async ({ args, configuration }) => ({ raw: { args, configuration } });";
/** Names the SDK must not rename: they are the reactor's own. */
const CONFIGURATION = { STRIPE_KEY: "sk_test_123", api_base_url: "https://api.example", retryCount: "3" };

describe.skipIf(STORE_UNAVAILABLE)("reactors against the real server", () => {
  let server: TestServer;
  /** The management key, its requests recorded. */
  let admin: TesseraClient;
  let privateApp: ApplicationWithKey;
  const sent: SentRequest[] = [];
  const lastSent = () => lastOf(sent);
  const wireBody = () => JSON.parse(lastSent().body ?? "null");

  beforeAll(async () => {
    server = await startTestServer();
    admin = new TesseraClient({
      baseUrl: server.url,
      apiKey: server.bootstrapKey,
      fetch: recordingFetch(sent),
    });
    privateApp = await admin.applications.create({
      name: "reactor identity",
      type: "private",
      permissions: ["token:use"],
    });
  });
  afterAll(() => server?.close());

  it("create sends snake_case with the configuration untouched and answers in camelCase with the Application", async () => {
    const self = await admin.applications.getByKey();
    const created = await admin.reactors.create({
      name: "charge",
      code: CODE,
      configuration: CONFIGURATION,
      application: { id: privateApp.id },
    });
    expect(lastSent()).toMatchObject({ method: "POST", url: `${server.url}/reactors` });
    expect(lastSent().headers.get("content-type")).toBe("application/json");
    expect(wireBody()).toEqual({
      name: "charge",
      code: CODE,
      configuration: CONFIGURATION,
      application: { id: privateApp.id },
    });
    const { key: _key, ...application } = privateApp;
    expect(created).toEqual({
      id: expect.stringMatching(UUID),
      tenantId: self.tenantId,
      name: "charge",
      code: CODE,
      configuration: CONFIGURATION,
      applicationId: privateApp.id,
      application,
      createdBy: self.id,
      createdAt: expect.stringMatching(ISO),
    });
  });

  it("get, update and patch keep configuration names as written; patch answers undefined", async () => {
    const { application: _application, ...created } = await admin.reactors.create({
      name: "r",
      code: CODE,
      configuration: {},
    });
    const fetched: Reactor = await admin.reactors.get(created.id);
    expect(fetched).toEqual({ ...created, configuration: {} });
    expect(lastSent()).toMatchObject({
      method: "GET",
      url: `${server.url}/reactors/${created.id}`,
      body: undefined,
    });

    const updated = await admin.reactors.update(created.id, {
      name: "r v2",
      code: CODE,
      configuration: CONFIGURATION,
      application: { id: privateApp.id },
    });
    expect(lastSent().method).toBe("PUT");
    expect(wireBody().configuration).toEqual(CONFIGURATION);
    expect(updated).toEqual({
      ...created,
      name: "r v2",
      configuration: CONFIGURATION,
      applicationId: privateApp.id,
      modifiedBy: created.createdBy,
      modifiedAt: expect.stringMatching(ISO),
    });

    const answer = await admin.reactors.patch(created.id, {
      configuration: { STRIPE_KEY: null, newName_here: "x" },
      application: null,
    });
    expect(answer).toBeUndefined();
    const request = lastSent();
    expect(request.method).toBe("PATCH");
    expect(request.headers.get("content-type")).toBe("application/merge-patch+json");
    expect(JSON.parse(request.body ?? "")).toEqual({
      configuration: { STRIPE_KEY: null, newName_here: "x" },
      application: null,
    });
    const patched = await admin.reactors.get(created.id);
    expect(patched.configuration).toEqual({
      api_base_url: "https://api.example",
      retryCount: "3",
      newName_here: "x",
    });
    expect(patched).not.toHaveProperty("applicationId");
  });

  it("list filters by ids and name and pages; listAll walks every page", async () => {
    const tag = `sdk-list-${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(
        (await admin.reactors.create({ name: `${tag} ${i}`, code: CODE, configuration: CONFIGURATION })).id,
      );
    }
    const page = await admin.reactors.list({ name: tag.toUpperCase(), page: 2, size: 2 });
    expect(new URL(lastSent().url).search).toBe(`?name=${tag.toUpperCase()}&page=2&size=2`);
    expect(page.pagination).toEqual({ totalItems: 5, pageNumber: 2, pageSize: 2, totalPages: 3 });
    expect(page.data.map((r) => r.id)).toEqual(ids.slice(2, 4));
    expect(page.data[0]!.configuration).toEqual(CONFIGURATION);

    const byIds = await admin.reactors.list({ ids: [ids[4]!, ids[0]!] });
    expect(new URL(lastSent().url).search).toBe(`?id=${ids[4]}&id=${ids[0]}`);
    expect(byIds.data.map((r) => r.id)).toEqual([ids[0], ids[4]]);

    const walked: string[] = [];
    for await (const reactor of admin.reactors.listAll({ name: `${tag}*`, size: 2 })) walked.push(reactor.id);
    expect(walked).toEqual(ids);
  });

  it("delete answers undefined, then get is a TesseraNotFoundError", async () => {
    const { id } = await admin.reactors.create({ configuration: {}, name: "doomed", code: CODE });
    expect(await admin.reactors.delete(id)).toBeUndefined();
    expect(lastSent()).toMatchObject({ method: "DELETE", url: `${server.url}/reactors/${id}` });
    const error = await rejectionOf(admin.reactors.get(id), TesseraNotFoundError);
    expect(error.status).toBe(404);
  });

  it("raises a TesseraValidationError with the code's line and column, and 403 without the permission", async () => {
    const invalid = await rejectionOf(
      admin.reactors.create({
        configuration: {},
        name: "broken",
        code: "module.exports = async () => {\n  return ;;\n  )\n};",
      }),
      TesseraValidationError,
    );
    expect(invalid.errors).toEqual({ code: ["Unexpected token ')' (line 3, column 3)"] });

    const reader = new TesseraClient({ baseUrl: server.url, apiKey: privateApp.key });
    await rejectionOf(reader.reactors.list(), TesseraForbiddenError);
  });

  it("react sends args untouched, returns raw and tokens as the reactor made them, and is never retried", async () => {
    const caller = await admin.applications.create({
      name: "caller",
      type: "private",
      rules: [
        { priority: 1, container: "/", transform: "reveal", permissions: ["token:use", "token:create"] },
      ],
    });
    const client = new TesseraClient({
      baseUrl: server.url,
      apiKey: caller.key,
      fetch: recordingFetch(sent),
    });
    const card = await client.tokens.create({ type: "card_number", data: "4242424242424242" });
    const { id } = await admin.reactors.create({
      configuration: {},
      name: "echo",
      code: `module.exports = async ({ args }) => ({
        raw: { last_four: args.card_number.slice(-4), amount_cents: args.amount_cents },
        tokenize: { copy_of_card: { type: "token", data: args.card_number } },
      });`,
    });
    const result = await client.reactors.react<{ last_four: string; amount_cents: number }>(id, {
      args: { card_number: `{{ ${card.id} }}`, amount_cents: 1299 },
    });
    expect(lastSent()).toMatchObject({ method: "POST", url: `${server.url}/reactors/${id}/react` });
    expect(wireBody()).toEqual({ args: { card_number: `{{ ${card.id} }}`, amount_cents: 1299 } });
    expect(result.raw).toEqual({ last_four: "4242", amount_cents: 1299 });
    expect(result.tokens).toMatchObject({ copy_of_card: { type: "token", created_by: caller.id } });

    const forbidden = await rejectionOf(admin.reactors.react(id), TesseraForbiddenError);
    expect(forbidden.detail).toMatch(/token:use/);
  });
});
