import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";

const CODE = "module.exports = async ({ args, configuration }) => ({ raw: { args, configuration } });";
const UUIDV7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const MISSING = "00000000-0000-4000-8000-000000000000";
const MERGE_PATCH = "application/merge-patch+json";

interface Created {
  id: string;
  key: string;
  [field: string]: unknown;
}

describe.skipIf(STORE_UNAVAILABLE)("Reactors API", () => {
  let server: TestServer;
  let bootstrap: { id: string; tenant_id: string };
  let privateApp: Created;
  let publicApp: Created;
  let managementApp: Created;
  /** A second tenant: its management key, and a private Application of its own. */
  let other: { key: string; tenantId: string; privateApp: Created };

  const reactorBody = (extra: Record<string, unknown> = {}) => ({
    name: "Charge card",
    code: CODE,
    configuration: { API_KEY: "sk_test_123", region: "eu" },
    ...extra,
  });

  async function application(body: unknown, key?: string): Promise<Created> {
    const response = await server.request("POST", "/applications", { body, ...(key && { key }) });
    expect(response.status, response.text).toBe(201);
    return response.body;
  }

  async function create(body: unknown = reactorBody(), key?: string) {
    const response = await server.request("POST", "/reactors", { body, ...(key && { key }) });
    expect(response.status, response.text).toBe(201);
    return response.body as { id: string; [field: string]: any };
  }

  const get = (id: string, key?: string) => server.request("GET", `/reactors/${id}`, key ? { key } : {});
  const patch = (id: string, body: unknown, key?: string) =>
    server.request("PATCH", `/reactors/${id}`, { body, contentType: MERGE_PATCH, ...(key && { key }) });

  beforeAll(async () => {
    server = await startTestServer();
    bootstrap = (await server.request("GET", "/applications/key")).body;
    privateApp = await application({ name: "reactor identity", type: "private", permissions: ["token:use"] });
    publicApp = await application({ name: "browser", type: "public", permissions: ["token:create"] });
    managementApp = await application({ name: "ops", type: "management", permissions: ["reactor:read"] });
    const tenant = await server.request("POST", "/tenants", { body: { name: "Other" } });
    expect(tenant.status, tenant.text).toBe(201);
    const otherKey = tenant.body.application.key as string;
    other = {
      key: otherKey,
      tenantId: tenant.body.id,
      privateApp: await application(
        { name: "theirs", type: "private", permissions: ["token:use"] },
        otherKey,
      ),
    };
  });
  afterAll(() => server?.close());

  describe("create", () => {
    it("answers 201 with the reactor and its whole Application, without the key", async () => {
      const created = await create(reactorBody({ application: { id: privateApp.id } }));
      const { key: _key, ...presentedApp } = privateApp;
      expect(created).toEqual({
        id: expect.stringMatching(UUIDV7),
        tenant_id: bootstrap.tenant_id,
        name: "Charge card",
        code: CODE,
        configuration: { API_KEY: "sk_test_123", region: "eu" },
        application_id: privateApp.id,
        application: presentedApp,
        created_by: bootstrap.id,
        created_at: expect.stringMatching(ISO),
      });
      expect(JSON.stringify(created)).not.toContain(privateApp.key);
    });

    it("accepts a public Application, and a whole Application object of which only the id is read", async () => {
      const withPublic = await create(reactorBody({ application: { id: publicApp.id } }));
      expect(withPublic.application.type).toBe("public");
      const { key: _key, ...presented } = privateApp;
      const whole = await create(
        reactorBody({ application: { ...privateApp, name: "ignored", type: "management" } }),
      );
      expect(whole.application).toEqual(presented);
    });

    it("takes a null application as none", async () => {
      const created = await create({ name: "bare", code: CODE, configuration: {}, application: null });
      expect(created).toEqual({
        id: expect.stringMatching(UUIDV7),
        tenant_id: bootstrap.tenant_id,
        name: "bare",
        code: CODE,
        configuration: {},
        created_by: bootstrap.id,
        created_at: expect.stringMatching(ISO),
      });
    });

    it("requires a configuration object (spec §4.3), and creates nothing without one", async () => {
      const before = (await server.request("GET", "/reactors?size=100")).body.pagination.total_items;
      for (const [body, message] of [
        [{ name: "bare", code: CODE }, "is required"],
        [{ name: "bare", code: CODE, configuration: null }, "must be an object"],
        [{ name: "bare", code: CODE, configuration: ["a"] }, "must be an object"],
      ] as const) {
        const response = await server.request("POST", "/reactors", { body });
        expectProblem(response, 400, { code: "validation-failed", errors: { configuration: [message] } });
      }
      expect((await server.request("GET", "/reactors?size=100")).body.pagination.total_items).toBe(before);
    });

    it("trims the name and keeps configuration names and values exactly as written", async () => {
      const configuration = { camelCase: "A", snake_case: "b", "with space": "", ünï: "çødé ✓" };
      const created = await create({ name: "  padded  ", code: CODE, configuration });
      expect(created.name).toBe("padded");
      expect(created.configuration).toEqual(configuration);
      expect((await get(created.id)).body.configuration).toEqual(configuration);
    });

    it.each<[string, Record<string, unknown>, Record<string, string[]>]>([
      [
        "missing name and code",
        { name: undefined, code: undefined },
        { name: ["is required"], code: ["is required"] },
      ],
      ["empty name", { name: "" }, { name: ["must not be empty"] }],
      ["blank name", { name: " \t " }, { name: ["must not be blank"] }],
      ["name over 200", { name: "n".repeat(201) }, { name: ["must be at most 200 characters"] }],
      ["name not a string", { name: 7 }, { name: ["must be a string"] }],
      ["name with NUL", { name: "a\u0000b" }, { name: ["must not contain NUL characters"] }],
      ["empty code", { code: "" }, { code: ["must not be empty"] }],
      ["blank code", { code: "\n  \n" }, { code: ["must not be blank"] }],
      ["code over 50,000", { code: "x".repeat(50_001) }, { code: ["must be at most 50000 characters"] }],
      ["syntax error", { code: "const x = ;" }, { code: ["Unexpected token ';' (line 1, column 11)"] }],
      [
        "syntax error further down",
        { code: "module.exports = async () => {\n  return { raw: 1 }\n}}" },
        { code: ["Unexpected token '}' (line 3, column 2)"] },
      ],
      [
        "unterminated code",
        { code: "module.exports = async () => {" },
        { code: ["Unexpected end of input (line 1)"] },
      ],
      [
        "modules outside the allow-list",
        {
          code: "const cp = require('child_process');\nconst fs = require(\"fs\");\nmodule.exports = async () => ({});",
        },
        {
          code: [
            "'child_process' is not an allowed module (line 1, column 12)",
            "'fs' is not an allowed module (line 2, column 12)",
          ],
        },
      ],
      ["configuration a string", { configuration: "a=b" }, { configuration: ["must be an object"] }],
      ["configuration an array", { configuration: ["a"] }, { configuration: ["must be an object"] }],
      [
        "configuration values not strings",
        { configuration: { n: 1, b: true, o: { x: "y" }, z: null } },
        {
          "configuration.n": ["must be a string"],
          "configuration.b": ["must be a string"],
          "configuration.o": ["must be a string"],
          "configuration.z": ["must be a string"],
        },
      ],
      [
        "configuration value over 10,000",
        { configuration: { big: "v".repeat(10_001) } },
        { "configuration.big": ["must be at most 10000 characters"] },
      ],
      [
        "configuration name over 200",
        { configuration: { ["k".repeat(201)]: "v" } },
        { configuration: ["must be at most 200 characters"] },
      ],
      ["configuration name empty", { configuration: { "": "v" } }, { configuration: ["must not be empty"] }],
      [
        "over 100 configuration entries",
        { configuration: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, "v"])) },
        { configuration: ["must have at most 100 entries"] },
      ],
      ["application without id", { application: {} }, { "application.id": ["is required"] }],
      [
        "application id not a uuid",
        { application: { id: "app" } },
        { "application.id": ["must be a valid uuid"] },
      ],
      ["application a string", { application: "x" }, { application: ["must be an object or null"] }],
      [
        "unknown application",
        { application: { id: MISSING } },
        { "application.id": ["must be the id of an Application of this tenant"] },
      ],
      ["unknown field", { formula: { id: MISSING } }, { formula: ["is not a known field"] }],
    ])("refuses %s with 400", async (_name, change, errors) => {
      const response = await server.request("POST", "/reactors", { body: { ...reactorBody(), ...change } });
      expectProblem(response, 400, { code: "validation-failed", errors });
      expect(Object.keys(response.body.errors).sort()).toEqual(Object.keys(errors).sort());
    });

    it("refuses a management Application and another tenant's, alike to an unknown one", async () => {
      expectProblem(
        await server.request("POST", "/reactors", {
          body: reactorBody({ application: { id: managementApp.id } }),
        }),
        400,
        { errors: { "application.id": ["must be a public or private Application, not management"] } },
      );
      expectProblem(
        await server.request("POST", "/reactors", {
          body: reactorBody({ application: { id: other.privateApp.id } }),
        }),
        400,
        { errors: { "application.id": ["must be the id of an Application of this tenant"] } },
      );
    });

    it("refuses an expired Application before any sweep has removed it", async () => {
      const expiring = await application({
        name: "short-lived",
        type: "private",
        permissions: ["token:use"],
        expires_at: new Date(server.clock.now().getTime() + 60_000).toISOString(),
      });
      server.clock.advance(120_000);
      expectProblem(
        await server.request("POST", "/reactors", {
          body: reactorBody({ application: { id: expiring.id } }),
        }),
        400,
        { errors: { "application.id": ["must be the id of an Application of this tenant"] } },
      );
    });

    it("lists every problem at once", async () => {
      const response = await server.request("POST", "/reactors", {
        body: { configuration: {}, name: "  ", code: "let x = ;", application: { id: managementApp.id } },
      });
      expectProblem(response, 400, {
        errors: {
          name: ["must not be blank"],
          code: [expect.stringMatching(/\(line 1, column \d+\)$/)],
          "application.id": ["must be a public or private Application, not management"],
        },
      });
    });

    it("stores nothing when it refuses", async () => {
      const before = (await server.request("GET", "/reactors?name=never%20stored")).body.pagination
        .total_items;
      expect(before).toBe(0);
      await server.request("POST", "/reactors", { body: reactorBody({ name: "never stored", code: "(" }) });
      expect((await server.request("GET", "/reactors?name=never%20stored")).body.data).toEqual([]);
    });
  });

  describe("get", () => {
    it("answers the reactor as created, without the Application object but with its id", async () => {
      const { application: _application, ...created } = await create(
        reactorBody({ application: { id: privateApp.id } }),
      );
      const response = await get(created.id);
      expect(response.status).toBe(200);
      expect(response.body).toEqual(created);
      expect(response.body).not.toHaveProperty("application");
    });

    it("answers 404 for an unknown id, another tenant's reactor alike, and 400 for a malformed id", async () => {
      const theirs = await create(reactorBody(), other.key);
      const missing = await get(MISSING);
      expectProblem(missing, 404, {
        code: "not-found",
        detail: new RegExp(`^Reactor ${MISSING} was not found$`),
      });
      const foreign = await get(theirs.id);
      expectProblem(foreign, 404, { code: "not-found" });
      expect(foreign.body.detail).toBe(`Reactor ${theirs.id} was not found`);
      expectProblem(await get("not-a-uuid"), 400, { errors: { id: ["must be a valid uuid"] } });
      expect((await get(theirs.id, other.key)).status).toBe(200);
    });
  });

  describe("list", () => {
    it("pages oldest first with the envelope, filters by repeated id, and answers past the end with data: []", async () => {
      const tenant = await server.request("POST", "/tenants", { body: { name: "Lister" } });
      const key = tenant.body.application.key as string;
      const created = [];
      for (let i = 0; i < 5; i++) {
        const { application: _a, ...reactor } = await create(reactorBody({ name: `list ${i}` }), key);
        created.push(reactor);
      }
      const all = await server.request("GET", "/reactors", { key });
      expect(all.status).toBe(200);
      expect(all.body).toEqual({
        pagination: { total_items: 5, page_number: 1, page_size: 20, total_pages: 1 },
        data: created,
      });

      const page2 = await server.request("GET", "/reactors?size=2&page=2", { key });
      expect(page2.body).toEqual({
        pagination: { total_items: 5, page_number: 2, page_size: 2, total_pages: 3 },
        data: created.slice(2, 4),
      });

      const filtered = await server.request("GET", `/reactors?id=${created[4]!.id}&id=${created[1]!.id}`, {
        key,
      });
      expect(filtered.body).toEqual({
        pagination: { total_items: 2, page_number: 1, page_size: 20, total_pages: 1 },
        data: [created[1], created[4]],
      });

      const past = await server.request("GET", "/reactors?page=9&size=2", { key });
      expect(past.status).toBe(200);
      expect(past.body).toEqual({
        pagination: { total_items: 5, page_number: 9, page_size: 2, total_pages: 3 },
        data: [],
      });

      // Another tenant's ids filter to nothing.
      const foreign = await server.request("GET", `/reactors?id=${created[0]!.id}`);
      expect(foreign.body.data).toEqual([]);
    });

    describe("name filter", () => {
      let key: string;
      const names = [
        "Stripe charge EU",
        "stripe-refund",
        "Adyen payout",
        "100% off_sale",
        "ÄRGER reactor",
        "refund via stripe",
      ];
      beforeAll(async () => {
        const tenant = await server.request("POST", "/tenants", { body: { name: "Filter" } });
        key = tenant.body.application.key as string;
        for (const name of names) await create(reactorBody({ name }), key);
        // Same names in the bootstrap tenant: never listed to this one.
        for (const name of names) await create(reactorBody({ name }));
      });

      it.each<[string, string[]]>([
        ["stripe", ["Stripe charge EU", "stripe-refund", "refund via stripe"]],
        ["STRIPE", ["Stripe charge EU", "stripe-refund", "refund via stripe"]],
        ["refund", ["stripe-refund", "refund via stripe"]],
        ["stripe*", ["Stripe charge EU", "stripe-refund"]],
        ["*stripe", ["refund via stripe"]],
        ["*eu", ["Stripe charge EU"]],
        ["stripe*refund", ["stripe-refund"]],
        ["s*e*u", ["Stripe charge EU"]],
        ["*", names],
        ["", names],
        ["100%", ["100% off_sale"]],
        ["%", ["100% off_sale"]],
        ["f_s", ["100% off_sale"]],
        ["o_f", []],
        ["_", ["100% off_sale"]],
        ["ärger", ["ÄRGER reactor"]],
        ["nothing like it", []],
      ])("%j matches %j", async (filter, expected) => {
        const response = await server.request(
          "GET",
          `/reactors?size=100&name=${encodeURIComponent(filter)}`,
          {
            key,
          },
        );
        expect(response.status, response.text).toBe(200);
        expect(response.body.data.map((r: { name: string }) => r.name)).toEqual(
          names.filter((n) => expected.includes(n)),
        );
        expect(response.body.pagination.total_items).toBe(expected.length);
      });

      it("combines with the id filter and pages", async () => {
        const stripe = (await server.request("GET", "/reactors?name=stripe", { key })).body.data;
        const response = await server.request(
          "GET",
          `/reactors?name=refund&id=${stripe[0].id}&id=${stripe[1].id}`,
          {
            key,
          },
        );
        expect(response.body.data.map((r: { name: string }) => r.name)).toEqual(["stripe-refund"]);
        const paged = await server.request("GET", "/reactors?name=stripe&size=2&page=2", { key });
        expect(paged.body).toMatchObject({
          pagination: { total_items: 3, page_number: 2, page_size: 2, total_pages: 2 },
          data: [{ name: "refund via stripe" }],
        });
      });
    });

    it.each([
      ["size=0", { size: ["must be at least 1"] }],
      ["size=101", { size: ["must be at most 100"] }],
      ["page=0", { page: ["must be at least 1"] }],
      ["id=not-a-uuid", { "id[0]": ["must be a valid uuid"] }],
      [`name=${"n".repeat(401)}`, { name: ["must be at most 400 characters"] }],
      ["name=a%00b", { name: ["must not contain NUL characters"] }],
      [Array.from({ length: 101 }, () => `id=${MISSING}`).join("&"), { id: ["must have at most 100 items"] }],
    ])("rejects %s with 400", async (query, errors) => {
      expectProblem(await server.request("GET", `/reactors?${query}`), 400, {
        code: "validation-failed",
        errors,
      });
    });
  });

  describe("update (PUT)", () => {
    it("replaces everything, sets modified_*, and answers without the Application object", async () => {
      const created = await create(reactorBody({ application: { id: privateApp.id } }));
      server.clock.advance(1000);
      const code = "module.exports = async () => ({ raw: 'v2' });";
      const response = await server.request("PUT", `/reactors/${created.id}`, {
        key: (await application({ name: "editor", type: "management", permissions: ["reactor:update"] })).key,
        body: { name: "Renamed", code, configuration: { only: "this" }, application: { id: publicApp.id } },
      });
      expect(response.status, response.text).toBe(200);
      const updated = response.body;
      expect(updated).toEqual({
        id: created.id,
        tenant_id: bootstrap.tenant_id,
        name: "Renamed",
        code,
        configuration: { only: "this" },
        application_id: publicApp.id,
        created_by: bootstrap.id,
        created_at: created.created_at,
        modified_by: expect.stringMatching(/^[0-9a-f-]{36}$/),
        modified_at: expect.stringMatching(ISO),
      });
      expect(updated.modified_by).not.toBe(bootstrap.id);
      expect(updated.modified_at > created.created_at).toBe(true);
      expect((await get(created.id)).body).toEqual(updated);
    });

    it("refuses a replacement without configuration, which would erase it, and removes a left-out Application", async () => {
      const created = await create(reactorBody({ application: { id: privateApp.id } }));
      for (const body of [
        { name: "plain", code: CODE },
        { name: "plain", code: CODE, configuration: null },
      ]) {
        const refused = await server.request("PUT", `/reactors/${created.id}`, { body });
        expectProblem(refused, 400, { code: "validation-failed" });
        expect(Object.keys(refused.body.errors)).toEqual(["configuration"]);
      }
      const { application: _application, ...stored } = created;
      expect((await get(created.id)).body).toEqual(stored);
      const response = await server.request("PUT", `/reactors/${created.id}`, {
        body: { name: "plain", code: CODE, configuration: {} },
      });
      expect(response.status).toBe(200);
      expect(response.body.configuration).toEqual({});
      expect(response.body).not.toHaveProperty("application_id");
      expect((await get(created.id)).body).toEqual(response.body);
    });

    it("validates like create and changes nothing on failure", async () => {
      const created = await create();
      const { application: _a, ...before } = created;
      const cases: [unknown, Record<string, string[]>][] = [
        [
          { name: "x", code: "const x = ;", configuration: {} },
          { code: ["Unexpected token ';' (line 1, column 11)"] },
        ],
        [{ name: "", code: CODE, configuration: {} }, { name: ["must not be empty"] }],
        [{ code: CODE, configuration: {} }, { name: ["is required"] }],
        [
          { name: "x", code: CODE, configuration: {}, application: { id: managementApp.id } },
          { "application.id": ["must be a public or private Application, not management"] },
        ],
        [
          { name: "x", code: CODE, configuration: {}, application: { id: other.privateApp.id } },
          { "application.id": ["must be the id of an Application of this tenant"] },
        ],
        [{ name: "x", code: CODE, configuration: { a: 1 } }, { "configuration.a": ["must be a string"] }],
      ];
      for (const [body, errors] of cases) {
        const response = await server.request("PUT", `/reactors/${created.id}`, { body });
        expectProblem(response, 400, { code: "validation-failed", errors });
      }
      expect((await get(created.id)).body).toEqual(before);
    });

    it("answers 404 for an unknown id and for another tenant's reactor, which stays as it was", async () => {
      const body = reactorBody();
      expectProblem(await server.request("PUT", `/reactors/${MISSING}`, { body }), 404, {
        code: "not-found",
      });
      const theirs = await create(reactorBody({ name: "theirs" }), other.key);
      expectProblem(await server.request("PUT", `/reactors/${theirs.id}`, { body }), 404, {
        code: "not-found",
      });
      expect((await get(theirs.id, other.key)).body.name).toBe("theirs");
      expectProblem(await server.request("PUT", "/reactors/nope", { body }), 400, {
        errors: { id: ["must be a valid uuid"] },
      });
    });
  });

  describe("patch", () => {
    it("merges the configuration, a null removing a name, and answers 204 with no body", async () => {
      const created = await create(
        reactorBody({ configuration: { a: "1", b: "2", c: "3" }, application: { id: privateApp.id } }),
      );
      server.clock.advance(1000);
      const response = await patch(created.id, { configuration: { a: null, b: "two", d: "4" } });
      expect(response.status, response.text).toBe(204);
      expect(response.text).toBe("");
      const after = (await get(created.id)).body;
      expect(after).toEqual({
        id: created.id,
        tenant_id: bootstrap.tenant_id,
        name: created.name,
        code: CODE,
        configuration: { b: "two", c: "3", d: "4" },
        application_id: privateApp.id,
        created_by: bootstrap.id,
        created_at: created.created_at,
        modified_by: bootstrap.id,
        modified_at: expect.stringMatching(ISO),
      });
      expect(after.modified_at > created.created_at).toBe(true);
    });

    it("changes only the members given; application null removes it, configuration null empties it", async () => {
      const created = await create(reactorBody({ application: { id: privateApp.id } }));
      expect((await patch(created.id, { name: "Renamed" })).status).toBe(204);
      expect((await get(created.id)).body).toMatchObject({
        name: "Renamed",
        code: CODE,
        configuration: created.configuration,
        application_id: privateApp.id,
      });

      const code = "module.exports = async () => ({ raw: 2 });";
      expect((await patch(created.id, { code, application: { id: publicApp.id } })).status).toBe(204);
      expect((await get(created.id)).body).toMatchObject({ code, application_id: publicApp.id });

      expect((await patch(created.id, { application: null })).status).toBe(204);
      expect((await get(created.id)).body).not.toHaveProperty("application_id");

      expect((await patch(created.id, { configuration: null })).status).toBe(204);
      expect((await get(created.id)).body.configuration).toEqual({});

      expect((await patch(created.id, {})).status).toBe(204);
      expect((await get(created.id)).body).toMatchObject({ name: "Renamed", code, configuration: {} });
    });

    it.each([
      ["application/json", "application/json"],
      ["text/plain", "text/plain"],
      ["merge-patch with a charset", `${MERGE_PATCH}; charset=utf-8`],
    ])("answers %s with 415 unless it is merge-patch", async (_name, contentType) => {
      const created = await create();
      const response = await server.request("PATCH", `/reactors/${created.id}`, {
        rawBody: JSON.stringify({ name: "changed" }),
        contentType,
      });
      if (contentType.startsWith(MERGE_PATCH)) {
        expect(response.status).toBe(204);
        return;
      }
      expectProblem(response, 415, { code: "unsupported-media-type" });
      if (contentType === "application/json") expect(response.body.detail).toContain(MERGE_PATCH);
      expect((await get(created.id)).body.name).toBe(created.name);
    });

    it.each<[string, unknown, Record<string, string[]>]>([
      ["name null", { name: null }, { name: ["must be a string"] }],
      ["blank name", { name: "  " }, { name: ["must not be blank"] }],
      ["long name", { name: "n".repeat(201) }, { name: ["must be at most 200 characters"] }],
      ["code null", { code: null }, { code: ["must be a string"] }],
      [
        "code with a syntax error",
        { code: "module.exports = async () => {\n  return ;;\n  retrun 1\n};" },
        { code: ["Unexpected number (line 3, column 10)"] },
      ],
      [
        "a module outside the allow-list",
        { code: "require('net')" },
        { code: ["'net' is not an allowed module (line 1, column 1)"] },
      ],
      [
        "configuration value a number",
        { configuration: { a: 1 } },
        { "configuration.a": ["must be a string or null"] },
      ],
      [
        "too many names after the merge",
        { configuration: Object.fromEntries(Array.from({ length: 99 }, (_, i) => [`k${i}`, "v"])) },
        { configuration: ["must have at most 100 entries"] },
      ],
      [
        "a management Application",
        () => ({ application: { id: managementApp.id } }),
        { "application.id": ["must be a public or private Application, not management"] },
      ],
      [
        "application id not a uuid",
        { application: { id: "x" } },
        { "application.id": ["must be a valid uuid"] },
      ],
      ["unknown field", { colour: "red" }, { colour: ["is not a known field"] }],
    ])("refuses %s with 400 and changes nothing", async (_name, body, errors) => {
      const created = await create();
      const { application: _a, ...before } = created;
      // A function where the body needs an id made in beforeAll.
      const sent: unknown = typeof body === "function" ? (body as () => unknown)() : body;
      expectProblem(await patch(created.id, sent), 400, { code: "validation-failed", errors });
      expect((await get(created.id)).body).toEqual(before);
    });

    it("applies patches sent at the same time one after the other, on every store: all succeed, none is lost", async () => {
      const created = await create(reactorBody({ configuration: {} }));
      // Past the 30 s the tenant's keys stay in memory: the patches read them again, inside their transactions.
      server.clock.advance(60_000);
      // Each patch adds one name: a patch merged into a stale copy of the reactor would drop the others'.
      const names = Array.from({ length: 20 }, (_, i) => `NAME_${i}`);
      const responses = await Promise.all(
        names.map((name, i) => patch(created.id, { configuration: { [name]: `value ${i}` } })),
      );
      expect(responses.map((response) => response.status)).toEqual(names.map(() => 204));
      expect((await get(created.id)).body.configuration).toEqual(
        Object.fromEntries(names.map((name, i) => [name, `value ${i}`])),
      );
      // Full replacements at the same time are applied one after the other as well: the last one wins whole.
      const bodies = names
        .slice(0, 10)
        .map((name) => reactorBody({ name, configuration: { [name]: "put" } }));
      const puts = await Promise.all(
        bodies.map((body) => server.request("PUT", `/reactors/${created.id}`, { body })),
      );
      expect(puts.map((response) => response.status)).toEqual(bodies.map(() => 200));
      const last = (await get(created.id)).body;
      expect(last.configuration).toEqual({ [last.name]: "put" });
    });

    it("answers 404 for an unknown id and for another tenant's reactor", async () => {
      expectProblem(await patch(MISSING, { name: "x" }), 404, { code: "not-found" });
      const theirs = await create(reactorBody({ name: "theirs" }), other.key);
      expectProblem(await patch(theirs.id, { name: "mine" }), 404, { code: "not-found" });
      expect((await get(theirs.id, other.key)).body.name).toBe("theirs");
    });
  });

  describe("delete", () => {
    it("answers 204, then 404 to get and to a second delete", async () => {
      const created = await create();
      const response = await server.request("DELETE", `/reactors/${created.id}`);
      expect(response.status).toBe(204);
      expect(response.text).toBe("");
      expectProblem(await get(created.id), 404, { code: "not-found" });
      expectProblem(await server.request("DELETE", `/reactors/${created.id}`), 404, { code: "not-found" });
    });

    it("answers 404 for another tenant's reactor and leaves it in place", async () => {
      const theirs = await create(reactorBody(), other.key);
      expectProblem(await server.request("DELETE", `/reactors/${theirs.id}`), 404, { code: "not-found" });
      expect((await get(theirs.id, other.key)).status).toBe(200);
    });
  });

  describe("when the Application is deleted", () => {
    it("keeps the reactor, without an Application", async () => {
      const app = await application({ name: "doomed", type: "private", permissions: ["token:use"] });
      const created = await create(reactorBody({ application: { id: app.id } }));
      expect((await server.request("DELETE", `/applications/${app.id}`)).status).toBe(204);
      const after = await get(created.id);
      expect(after.status).toBe(200);
      expect(after.body).not.toHaveProperty("application_id");
      expect(after.body.configuration).toEqual(created.configuration);
    });
  });

  describe("permissions", () => {
    it("lets a management key with reactor:read read but not write", async () => {
      const created = await create();
      expect((await get(created.id, managementApp.key)).status).toBe(200);
      expect((await server.request("GET", "/reactors", { key: managementApp.key })).status).toBe(200);
      expectProblem(
        await server.request("POST", "/reactors", { key: managementApp.key, body: reactorBody() }),
        403,
        { code: "forbidden", detail: /reactor:create/ },
      );
      expectProblem(await patch(created.id, { name: "x" }, managementApp.key), 403, {
        detail: /reactor:update/,
      });
      expectProblem(
        await server.request("DELETE", `/reactors/${created.id}`, { key: managementApp.key }),
        403,
        {
          detail: /reactor:delete/,
        },
      );
    });

    it("refuses a private key even to read, and a missing key with 401", async () => {
      expectProblem(await server.request("GET", "/reactors", { key: privateApp.key }), 403, {
        detail: /reactor:read/,
      });
      expectProblem(await server.request("GET", "/reactors", { key: null }), 401, {
        code: "unauthenticated",
      });
    });
  });
});
