import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PROPERTY_TIMEOUT_MS,
  QUERY_VALUES,
  RUN_PARAMETERS,
  checkRequest,
  contentType,
  extraHeaders,
  fuzzedKeyOf,
  idSegment,
  keyNameOf,
  mutatedBodyTextOf,
  mutationOf,
  pathsOf,
  queryStringOf,
  randomJsonText,
  rawJsonTextOf,
  requests,
  setAt,
  textMutationOf,
  violations,
  weirdStringOf,
  weirdValueOf,
  type Endpoint as GenericEndpoint,
  type FuzzRequest,
  type Header,
} from "../../test/fuzz-helpers.js";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../test/harness.js";

/*
 * Property: no malformed request to an Applications (or tenant) endpoint produces a 5xx. Every answer is below
 * 500, and every 4xx is an RFC 9457 problem+json document. Bodies, content types, query strings, path ids and
 * headers are random or mutated from valid requests. TESSERA_FUZZ_RUNS and TESSERA_FUZZ_SEED reproduce a run.
 * The oracle and the generic generators live in test/fuzz-helpers.ts.
 */

// ---------------------------------------------------------------------------------------------------------------
// Generators

const SPECIAL_STRINGS = [
  "",
  " ",
  "   ",
  "\t\n",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "\u202eevil",
  "\ufeff",
  "𝕏𝔶𝕫",
  "e\u0301",
  "null",
  "true",
  "1",
  "-1",
  "[]",
  "{}",
  "__proto__",
  "constructor",
  "' OR 1=1 --",
  "%",
  "%zz",
  "/pci/",
  "/PCI/HIGH/",
  "/",
  "//",
  "pci",
  "/a b/",
  "/../",
  "token:use",
  "token:read",
  "application:read",
  "tenant:create",
  "private",
  "public",
  "management",
  "mask",
  "reveal",
  "redact",
  "id",
  "container",
  "equals",
  "starts_with",
  "2999-01-01T00:00:00Z",
  "2000-01-01T00:00:00Z",
  "2999-02-30T00:00:00Z",
  "2999-12-31T23:59:60Z",
  "9999-12-31T23:59:59Z",
  "9999-12-31T23:59:59-23:59",
  "2999-01-01t00:00:00z",
  "+275760-09-13T00:00:00Z",
  "0000-01-01T00:00:00Z",
  "00000000-0000-0000-0000-000000000000",
];

const weirdString = weirdStringOf(SPECIAL_STRINGS);

const weirdValue: fc.Arbitrary<unknown> = weirdValueOf(weirdString, [
  null,
  true,
  false,
  0,
  -0,
  -1,
  1,
  1.5,
  1e308,
  -1e308,
  Number.MIN_VALUE,
  2 ** 53 + 1,
  1_000_000,
  1_000_001,
  [],
  {},
  [null],
  [[]],
  { "": null },
  ["token:use", "token:use"],
  [{ attribute: "id", operator: "equals", value: "x" }],
]);

/** JSON text that JSON.stringify cannot produce: spliced into a body in place of a marker value. */
const rawJsonText = rawJsonTextOf([
  '{"name":"a","name":1}',
  '{"priority":1,"priority":"1"}',
  '{"__proto__":{"type":"management"}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
]);

const keyName = keyNameOf([
  "name",
  "type",
  "permissions",
  "rules",
  "expires_at",
  "priority",
  "container",
  "conditions",
  "transform",
  "description",
  "id",
  "key",
  "tenant_id",
  "created_by",
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "",
]);

const mutation = mutationOf({ weirdValue, weirdString, keyName, rawJsonText });
const textMutation = textMutationOf(keyName, weirdValue);

const rule = {
  priority: 1,
  container: "/PCI/",
  transform: "mask",
  permissions: ["token:read", "token:search"],
};
const VALID_BODIES: readonly unknown[] = [
  { name: "x", type: "private", permissions: ["token:use"], rules: [rule] },
  {
    name: "conditions",
    type: "private",
    rules: [
      {
        priority: 2,
        transform: "reveal",
        permissions: ["token:read"],
        conditions: [{ attribute: "id", operator: "equals", value: "a" }],
      },
    ],
  },
  {
    name: "pub",
    type: "public",
    permissions: ["token:create"],
    rules: [{ ...rule, permissions: ["token:update"] }],
  },
  { name: "mgr", type: "management", permissions: ["application:read", "application:update"] },
  { name: "expiring", type: "private", permissions: ["token:use"], expires_at: "2999-01-01T00:00:00Z" },
  { name: "renamed", permissions: ["token:read"], rules: [{ ...rule, description: "d" }] },
  { name: "fuzz tenant" },
];

const validBodyText = fc.constantFrom(...VALID_BODIES).map((body) => JSON.stringify(body));

const mutatedBodyText = mutatedBodyTextOf(fc.constantFrom(...VALID_BODIES), mutation, textMutation);

const FREE_TEXT = new Set(["name", "description", "value"]);

/** A valid body with one free-text field (stored as is) replaced by an odd string: control characters, NUL, … */
const oddTextBodyText = fc
  .record({ valid: fc.constantFrom(...VALID_BODIES), pick: fc.nat(), value: weirdString })
  .map(({ valid, pick, value }) => {
    const body = structuredClone(valid);
    const fields = pathsOf(body).filter((p) => FREE_TEXT.has(String(p[p.length - 1])));
    return JSON.stringify(fields.length === 0 ? body : setAt(body, fields[pick % fields.length]!, value));
  });

const nonJsonBody: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "{",
    "}",
    "[",
    "{'name':'x'}",
    "{name:x}",
    '{"name":"x",}',
    "NaN",
    "undefined",
    "\u0000",
    "\ufeff{}",
    "name=x&type=private",
    '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--x--\r\n',
  ),
  fc.string({ maxLength: 60 }),
  fc.string({ unit: "binary", maxLength: 60 }),
  validBodyText.chain((text) => fc.nat({ max: text.length - 1 }).map((n) => text.slice(0, n))),
  fc.uint8Array({ maxLength: 80 }),
  fc
    .uint8Array({ maxLength: 40 })
    .map((bytes) => new Uint8Array([...Buffer.from('{"name":"'), ...bytes, ...Buffer.from('"}')])),
);

const QUERY_KEYS = [
  "page",
  "size",
  "id",
  "id[]",
  "id[0]",
  "ID",
  "Page",
  "__proto__",
  "constructor",
  "",
  "a",
  "%",
  "%zz",
];

function queryString(ids: readonly string[]): fc.Arbitrary<string> {
  return queryStringOf({ ids, keys: QUERY_KEYS, values: QUERY_VALUES });
}

interface Context {
  readonly bootstrapKey: string;
  readonly managementKey: string;
  readonly privateKey: string;
  readonly bootstrapId: string;
  /** Ids that destructive endpoints may hit: never the bootstrap Application's. */
  readonly disposableIds: readonly string[];
  /** Only ever updated with valid requests, so that the store sees odd text rather than a 404. */
  readonly textTargetId: string;
}

function validKey(ctx: Context): fc.Arbitrary<readonly Header[]> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant([["svc-api-key", ctx.bootstrapKey] as const]) },
    { weight: 1, arbitrary: fc.constant([["SVC-API-KEY", ctx.managementKey] as const]) },
    { weight: 1, arbitrary: fc.constant([["svc-api-key", ctx.privateKey] as const]) },
  );
}

function fuzzedKey(ctx: Context): fc.Arbitrary<readonly Header[]> {
  return fuzzedKeyOf([ctx.bootstrapKey, ctx.managementKey, ctx.privateKey]);
}

type Endpoint = GenericEndpoint<Context>;

const allIds = (ctx: Context) => [ctx.bootstrapId, ...ctx.disposableIds];

const ENDPOINTS: readonly Endpoint[] = [
  { name: "create", method: "POST", path: () => fc.constant("/applications"), takesBody: true },
  { name: "list", method: "GET", path: () => fc.constant("/applications"), takesBody: false },
  { name: "self", method: "GET", path: () => fc.constant("/applications/key"), takesBody: false },
  {
    name: "get",
    method: "GET",
    path: (ctx) => idSegment(allIds(ctx)).map((id) => `/applications/${id}`),
    takesBody: false,
  },
  {
    name: "update",
    method: "PUT",
    path: (ctx) => idSegment(ctx.disposableIds).map((id) => `/applications/${id}`),
    takesBody: true,
  },
  {
    name: "regenerate",
    method: "POST",
    path: (ctx) => idSegment(ctx.disposableIds).map((id) => `/applications/${id}/regenerate`),
    takesBody: true,
  },
  {
    name: "delete",
    method: "DELETE",
    path: (ctx) => idSegment(ctx.disposableIds).map((id) => `/applications/${id}`),
    takesBody: true,
  },
  { name: "create tenant", method: "POST", path: () => fc.constant("/tenants"), takesBody: true },
  { name: "own tenant", method: "GET", path: () => fc.constant("/tenants/self"), takesBody: false },
];

// ---------------------------------------------------------------------------------------------------------------
// The tests

describe("the fuzzing oracle", () => {
  const problem = (status: number) => JSON.stringify({ type: "urn:tessera:problem:x", title: "X", status });
  it("accepts problem 4xx and JSON 2xx", () => {
    expect(
      violations({ status: 404, contentType: "application/problem+json; charset=utf-8", text: problem(404) }),
    ).toEqual([]);
    expect(violations({ status: 200, contentType: "application/json", text: "{}" })).toEqual([]);
    expect(violations({ status: 204, contentType: null, text: "" })).toEqual([]);
  });
  it("rejects a 5xx even as a well-formed problem, and a 4xx that is not one", () => {
    expect(
      violations({ status: 500, contentType: "application/problem+json", text: problem(500) }),
    ).not.toEqual([]);
    expect(
      violations({ status: 503, contentType: "application/problem+json", text: problem(503) }),
    ).not.toEqual([]);
    const fastify = '{"error":"Bad Request","code":"FST_ERR_BAD_URL","message":"x","statusCode":400}';
    expect(violations({ status: 400, contentType: "application/json", text: fastify })).not.toEqual([]);
    expect(
      violations({ status: 400, contentType: "application/problem+json", text: problem(401) }),
    ).not.toEqual([]);
    expect(violations({ status: 431, contentType: null, text: "" })).not.toEqual([]);
    const badErrors = JSON.stringify({ ...JSON.parse(problem(400)), errors: { name: "is required" } });
    expect(violations({ status: 400, contentType: "application/problem+json", text: badErrors })).not.toEqual(
      [],
    );
  });
});

describe.skipIf(STORE_UNAVAILABLE)("Applications API under fuzzing", () => {
  let server: TestServer;
  let ctx: Context;

  beforeAll(async () => {
    server = await startTestServer();
    const bootstrap = await server.request("GET", "/applications/key");
    const create = async (body: unknown) => {
      const response = await server.request("POST", "/applications", { body });
      expect(response.status, response.text).toBe(201);
      return response.body as { id: string; key: string };
    };
    const privateApp = await create(VALID_BODIES[0]);
    const managementApp = await create({
      name: "fuzz manager",
      type: "management",
      permissions: [
        "application:create",
        "application:read",
        "application:update",
        "application:delete",
        "tenant:read",
      ],
    });
    const textTarget = await create(VALID_BODIES[0]);
    ctx = {
      bootstrapKey: server.bootstrapKey,
      bootstrapId: (bootstrap.body as { id: string }).id,
      managementKey: managementApp.key,
      privateKey: privateApp.key,
      disposableIds: [privateApp.id, managementApp.id],
      textTargetId: textTarget.id,
    };
  });
  afterAll(() => server?.close());

  const holds = async (request: FuzzRequest) => {
    await checkRequest(server.url, request);
  };

  const plainQuery = fc.constant("");

  it(
    "answers mutated and random JSON bodies with a 4xx problem or a success",
    async () => {
      const body = fc.oneof(
        { weight: 1, arbitrary: validBodyText },
        { weight: 6, arbitrary: mutatedBodyText },
        { weight: 3, arbitrary: oddTextBodyText },
        { weight: 2, arbitrary: randomJsonText },
      );
      const arbitrary = requests(
        ctx,
        ENDPOINTS.filter((e) => e.takesBody),
        {
          body,
          contentType: fc.constant("application/json"),
          query: plainQuery,
          key: validKey(ctx),
          headers: fc.constant([]),
        },
      );
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "stores odd free text (NUL, control characters, lone surrogates) or rejects it with a 4xx problem",
    async () => {
      // Real ids only: garbage ids are the other properties' business; here the body must reach the store.
      const writes: Endpoint[] = [
        ...ENDPOINTS.filter((e) => e.name === "create" || e.name === "create tenant"),
        {
          name: "update",
          method: "PUT",
          path: (c) => fc.constant(`/applications/${c.textTargetId}`),
          takesBody: true,
        },
      ];
      const arbitrary = requests(ctx, writes, {
        body: oddTextBodyText,
        contentType: fc.constant("application/json"),
        query: plainQuery,
        key: fc.constant([["svc-api-key", ctx.bootstrapKey] as const]),
        headers: fc.constant([]),
      });
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "answers raw, non-JSON bodies under any content type with a 4xx problem or a success",
    async () => {
      const body = fc.oneof(nonJsonBody, validBodyText, mutatedBodyText);
      const arbitrary = requests(
        ctx,
        ENDPOINTS.filter((e) => e.takesBody),
        { body, contentType, query: plainQuery, key: validKey(ctx), headers: fc.constant([]) },
      );
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "answers random query strings and path ids with a 4xx problem or a success",
    async () => {
      const arbitrary = requests(ctx, ENDPOINTS, {
        body: validBodyText,
        contentType: fc.constant("application/json"),
        query: queryString(allIds(ctx)),
        key: validKey(ctx),
        headers: fc.constant([]),
      });
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "answers random API keys and headers with a 4xx problem or a success",
    async () => {
      const arbitrary = requests(ctx, ENDPOINTS, {
        body: fc.oneof(validBodyText, mutatedBodyText, oddTextBodyText),
        contentType,
        query: fc.oneof(plainQuery, queryString(allIds(ctx))),
        key: fc.oneof(validKey(ctx), fuzzedKey(ctx)),
        headers: extraHeaders,
      });
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "answers everything fuzzed at once, with other methods too, with a 4xx problem or a success",
    async () => {
      const arbitrary = requests(ctx, ENDPOINTS, {
        body: fc.oneof(mutatedBodyText, oddTextBodyText, randomJsonText, nonJsonBody),
        contentType,
        query: fc.oneof(plainQuery, queryString(allIds(ctx))),
        key: fc.oneof(validKey(ctx), fuzzedKey(ctx)),
        headers: extraHeaders,
        otherMethod: true,
      });
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it("is still healthy afterwards, and the bootstrap key still works", async () => {
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    const self = await server.request("GET", "/applications/key");
    expect(self.status, self.text).toBe(200);
    expect((self.body as { id: string }).id).toBe(ctx.bootstrapId);
    const created = await server.request("POST", "/applications", { body: VALID_BODIES[0] });
    expect(created.status, created.text).toBe(201);
  });
});
