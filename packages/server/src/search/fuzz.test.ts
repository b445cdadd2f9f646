import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PROPERTY_TIMEOUT_MS,
  RUN_PARAMETERS,
  checkRequest,
  fuzzRequest,
  isObject,
  keyNameOf,
  mutatedBodyTextOf,
  mutationOf,
  nearValidQuery,
  randomJsonText,
  rawJsonTextOf,
  textMutationOf,
  weirdStringOf,
  weirdValueOf,
  type FuzzRequest,
  type Observed,
} from "../../test/fuzz-helpers.js";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../test/harness.js";

const queryText = fc.oneof(
  { weight: 3, arbitrary: nearValidQuery(30) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 200 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme-ascii", minLength: 4000, maxLength: 4200 }) },
);

/** A search request the parser answers; the body around it is mutated in other runs. */
const validBody = fc.record({
  query: queryText,
  page: fc.integer({ min: 1, max: 5 }),
  size: fc.integer({ min: 1, max: 100 }),
});

describe.skipIf(STORE_UNAVAILABLE)("search fuzzing over HTTP", () => {
  let server: TestServer;
  let key: string;

  beforeAll(async () => {
    server = await startTestServer();
    const app = await server.request("POST", "/applications", {
      body: {
        name: "fuzz searcher",
        type: "private",
        rules: [
          { priority: 1, container: "/", transform: "mask", permissions: ["token:search", "token:create"] },
        ],
      },
    });
    key = app.body.key as string;
    for (const body of [
      { type: "social_security_number", data: "123-45-6789", metadata: { region: "eu" } },
      { type: "token", data: "abc", search_indexes: ["{{ data }}"], containers: ["/pci/high/"] },
    ]) {
      expect((await server.request("POST", "/tokens", { key, body })).status).toBe(201);
    }
  });
  afterAll(() => server?.close());

  const request = (body: string): FuzzRequest =>
    fuzzRequest({
      method: "POST",
      target: "/tokens/search",
      headers: [
        ["svc-api-key", key],
        ["content-type", "application/json"],
      ],
      body,
    });

  /** A query answer is a page, or a 400 whose errors say what is wrong with which field. */
  function searchContract(_request: FuzzRequest, response: Observed): string[] {
    if (response.status === 200) {
      const body: unknown = JSON.parse(response.text);
      return isObject(body) && Array.isArray(body.data) && isObject(body.pagination)
        ? []
        : ["a 200 is not a page"];
    }
    if (response.status !== 400) return [`status ${response.status} where 200 or 400 was expected`];
    const body = JSON.parse(response.text) as { errors?: Record<string, string[]> };
    return body.errors !== undefined && Object.keys(body.errors).length > 0
      ? []
      : ["a 400 does not say which field is wrong"];
  }

  it(
    "answers random and near-valid queries with a page or a 400 naming the query, never a 5xx or a hang",
    async () => {
      await fc.assert(
        fc.asyncProperty(queryText, async (query) => {
          const response = await checkRequest(server.url, request(JSON.stringify({ query })), searchContract);
          if (response.status === 400) {
            const errors = (JSON.parse(response.text) as { errors: Record<string, string[]> }).errors;
            expect(errors.query?.[0]).toMatch(/\(at offset \d+\)$/);
          }
        }),
        { ...RUN_PARAMETERS, numRuns: RUN_PARAMETERS.numRuns * 2 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "answers mutated and random bodies within the problem contract",
    async () => {
      const names = ["query", "page", "size", "sort", "__proto__", "constructor"];
      const keyName = keyNameOf(names);
      const weirdString = weirdStringOf(["type:token", "(", "data:*", ""]);
      const weirdValue = weirdValueOf(weirdString, [null, 0, -1, 101, 1e9, "1", [], {}]);
      const mutation = mutationOf({ weirdValue, weirdString, keyName, rawJsonText: rawJsonTextOf([]) });
      const bodies = fc.oneof(
        { weight: 3, arbitrary: mutatedBodyTextOf(validBody, mutation, textMutationOf(keyName, weirdValue)) },
        { weight: 1, arbitrary: randomJsonText },
      );
      await fc.assert(
        fc.asyncProperty(bodies, async (body) => {
          await checkRequest(server.url, request(body));
        }),
        RUN_PARAMETERS,
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});
