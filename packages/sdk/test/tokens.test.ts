import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../server/test/harness.js";
import {
  TesseraClient,
  TesseraConflictError,
  TesseraError,
  TesseraForbiddenError,
  TesseraNotFoundError,
  TesseraValidationError,
  type Application,
  type Token,
} from "../src/index.js";
import { lastOf, recordingFetch, type SentRequest } from "./recorder.js";
import { rejectionOf } from "./rejection.js";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const CARD = { number: "4242424242424242", expiration_month: 12, expiration_year: 2030, cvc: "123" };
const CARD_MASK = {
  number: "{{ data.number | reveal_last: 4 }}",
  expiration_month: "{{ data.expiration_month }}",
  expiration_year: "{{ data.expiration_year }}",
};
const ALL_TOKEN_PERMISSIONS = [
  "token:create",
  "token:read",
  "token:update",
  "token:delete",
  "token:search",
] as const;

describe.skipIf(STORE_UNAVAILABLE)("tokens, tokenize and detokenize against the real server", () => {
  let server: TestServer;
  /** Reveals every container, holds every token permission; its requests are recorded. */
  let backend: TesseraClient;
  let backendApp: Application;
  /** Holds only token:read and token:search, so it sees masks. */
  let support: TesseraClient;
  /** Reads through a redacting rule. */
  let redacted: TesseraClient;
  const sent: SentRequest[] = [];
  const lastSent = () => lastOf(sent);
  const wireBody = () => JSON.parse(lastSent().body ?? "null");

  beforeAll(async () => {
    server = await startTestServer();
    const admin = new TesseraClient({ baseUrl: server.url, apiKey: server.bootstrapKey });
    const created = await admin.applications.create({
      name: "backend",
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "reveal", permissions: [...ALL_TOKEN_PERMISSIONS] }],
    });
    backendApp = created;
    backend = new TesseraClient({ baseUrl: server.url, apiKey: created.key, fetch: recordingFetch(sent) });
    const supportApp = await admin.applications.create({
      name: "support",
      type: "private",
      permissions: ["token:read", "token:search"],
    });
    support = new TesseraClient({ baseUrl: server.url, apiKey: supportApp.key });
    const redactedApp = await admin.applications.create({
      name: "auditor",
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "redact", permissions: ["token:read"] }],
    });
    redacted = new TesseraClient({ baseUrl: server.url, apiKey: redactedApp.key });
  });
  afterAll(() => server?.close());

  /** Tokens created by one test only, told apart by a metadata tag. */
  async function createBatch(count: number): Promise<{ batch: string; ids: string[] }> {
    const batch = `batch-${randomBytes(4).toString("hex")}`;
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      ids.push((await backend.tokens.create({ data: `value ${i}`, metadata: { batch } })).id);
    }
    // Newest first, as lists and searches answer.
    return { batch, ids: ids.reverse() };
  }

  describe("tokens", () => {
    it("create sends snake_case with the data, metadata and mask untouched, and returns the token in camelCase", async () => {
      const expiresAt = new Date(Date.now() + 3_600_000);
      const token = await backend.tokens.create({
        type: "card",
        data: CARD,
        metadata: { customer_id: "cus_123", orderRef: "A-1" },
        containers: ["/pci/cards/"],
        expiresAt,
      });
      expect(token).toEqual({
        id: expect.stringMatching(UUID),
        type: "card",
        tenantId: backendApp.tenantId,
        data: CARD,
        mask: CARD_MASK,
        metadata: { customer_id: "cus_123", orderRef: "A-1" },
        fingerprint: expect.any(String),
        fingerprintExpression: "{{ data.number }}",
        searchIndexes: [],
        containers: ["/pci/cards/"],
        expiresAt: expiresAt.toISOString(),
        createdBy: backendApp.id,
        createdAt: expect.stringMatching(ISO),
      });
      expect(lastSent().method).toBe("POST");
      expect(lastSent().url).toBe(`${server.url}/tokens`);
      expect(lastSent().headers.get("content-type")).toBe("application/json");
      expect(wireBody()).toEqual({
        type: "card",
        data: CARD,
        metadata: { customer_id: "cus_123", orderRef: "A-1" },
        containers: ["/pci/cards/"],
        expires_at: expiresAt.toISOString(),
      });
    });

    it("create takes searchIndexes, fingerprintExpression, a chosen id and deduplicateToken", async () => {
      const id = `order ${randomBytes(4).toString("hex")}/1`;
      const input = {
        id,
        type: "token" as const,
        data: { userName: "jane", home_city: "Oslo" },
        searchIndexes: ["{{ data.userName }}"],
        fingerprintExpression: "{{ data.userName }}",
        mask: { userName: "{{ data.userName | slice: 0 }}" },
        deduplicateToken: true,
      };
      const token = await backend.tokens.create(input);
      expect(wireBody()).toEqual({
        id,
        type: "token",
        data: { userName: "jane", home_city: "Oslo" },
        search_indexes: ["{{ data.userName }}"],
        fingerprint_expression: "{{ data.userName }}",
        mask: { userName: "{{ data.userName | slice: 0 }}" },
        deduplicate_token: true,
      });
      expect(token).toMatchObject({
        id,
        data: input.data,
        mask: input.mask,
        searchIndexes: input.searchIndexes,
        fingerprintExpression: input.fingerprintExpression,
        containers: ["/general/high/"],
      });
      expect(token).not.toHaveProperty("_extras");

      const again = await backend.tokens.create({ ...input, id: undefined });
      expect(again).toEqual({ ...token, _extras: { deduplicated: true } });

      // A chosen id is percent-encoded in the path.
      expect(await backend.tokens.get(id)).toEqual(token);
      expect(lastSent().url).toBe(`${server.url}/tokens/${encodeURIComponent(id)}`);
      expect(lastSent().url).toContain("%2F1");
    });

    it("get shows the data through the caller's rule: revealed, masked or left out", async () => {
      const created = await backend.tokens.create({ type: "card", data: CARD, metadata: { source: "get" } });
      expect(await backend.tokens.get(created.id)).toEqual(created);
      expect(lastSent()).toMatchObject({
        method: "GET",
        url: `${server.url}/tokens/${created.id}`,
        body: undefined,
      });

      const masked = await support.tokens.get(created.id);
      expect(masked.data).toEqual({
        number: "XXXXXXXXXXXX4242",
        expiration_month: 12,
        expiration_year: 2030,
      });
      expect(masked.metadata).toEqual({ source: "get" });

      const hidden = await redacted.tokens.get(created.id);
      expect(hidden).not.toHaveProperty("data");
      expect(hidden.id).toBe(created.id);
    });

    it("update sends a merge patch as application/merge-patch+json; a null removes a key", async () => {
      const created = await backend.tokens.create({
        type: "card",
        data: CARD,
        metadata: { customer_id: "cus_123", orderRef: "A-1" },
        expiresAt: new Date(Date.now() + 3_600_000),
      });
      const updated = await backend.tokens.update(created.id, {
        data: { expiration_month: 6, cvc: null },
        metadata: { orderRef: null, review_state: "verified" },
        mask: { expiration_year: null },
        expiresAt: null,
      });
      const request = lastSent();
      expect(request.method).toBe("PATCH");
      expect(request.url).toBe(`${server.url}/tokens/${created.id}`);
      expect(request.headers.get("content-type")).toBe("application/merge-patch+json");
      expect(JSON.parse(request.body ?? "")).toEqual({
        data: { expiration_month: 6, cvc: null },
        metadata: { orderRef: null, review_state: "verified" },
        mask: { expiration_year: null },
        expires_at: null,
      });

      const { expiresAt: _expiresAt, ...unexpiring } = created;
      expect(updated).toEqual({
        ...unexpiring,
        data: { number: CARD.number, expiration_month: 6, expiration_year: 2030 },
        metadata: { customer_id: "cus_123", review_state: "verified" },
        mask: { number: CARD_MASK.number, expiration_month: CARD_MASK.expiration_month },
        modifiedBy: backendApp.id,
        modifiedAt: expect.stringMatching(ISO),
      });
      expect(await backend.tokens.get(created.id)).toEqual(updated);
    });

    it("delete resolves to undefined; the token is then gone", async () => {
      const created = await backend.tokens.create({ data: "to delete" });
      expect(await backend.tokens.delete(created.id)).toBeUndefined();
      expect(lastSent()).toMatchObject({ method: "DELETE", url: `${server.url}/tokens/${created.id}` });
      await rejectionOf(backend.tokens.get(created.id), TesseraNotFoundError);
      const again = await rejectionOf(backend.tokens.delete(created.id), TesseraNotFoundError);
      expect(again).toMatchObject({ status: 404, detail: `Token ${created.id} was not found` });
    });

    it("list filters by ids, type and metadata, newest first, a page at a time", async () => {
      const { batch, ids } = await createBatch(5);
      const everything = await backend.tokens.list({ metadata: { batch: batch.toUpperCase() } });
      expect(lastSent().url).toBe(`${server.url}/tokens?metadata.batch=${batch.toUpperCase()}`);
      expect(everything.pagination).toEqual({ totalItems: 5, pageNumber: 1, pageSize: 20, totalPages: 1 });
      expect(everything.data.map((token) => token.id)).toEqual(ids);
      expect(everything.data[0]).toMatchObject({ type: "token", data: "value 4", metadata: { batch } });

      const byId = await backend.tokens.list({ ids: [ids[0]!, ids[3]!], type: "token", size: 10 });
      expect(lastSent().url).toBe(`${server.url}/tokens?id=${ids[0]}&id=${ids[3]}&type=token&size=10`);
      expect(byId.data.map((token) => token.id)).toEqual([ids[0], ids[3]]);

      expect((await backend.tokens.list({ metadata: { batch }, type: "card" })).data).toEqual([]);

      const page2 = await backend.tokens.list({ metadata: { batch }, page: 2, size: 2 });
      expect(page2.pagination).toEqual({ totalItems: 5, pageNumber: 2, pageSize: 2, totalPages: 3 });
      expect(page2.data).toEqual(everything.data.slice(2, 4));

      const masked = await support.tokens.list({ ids: [ids[0]!] });
      expect(masked.data[0]).not.toHaveProperty("data");
    });

    it("listAll yields every token of every page, fetching pages lazily", async () => {
      const { batch, ids } = await createBatch(5);
      const before = sent.length;
      const seen: Token[] = [];
      for await (const token of backend.tokens.listAll({ metadata: { batch }, size: 2 })) seen.push(token);
      expect(seen.map((token) => token.id)).toEqual(ids);
      expect(sent.slice(before).map((request) => new URL(request.url).searchParams.get("page"))).toEqual([
        "1",
        "2",
        "3",
      ]);

      const started = sent.length;
      for await (const token of backend.tokens.listAll({ metadata: { batch }, size: 2 })) {
        expect(token.id).toBe(ids[0]);
        break;
      }
      expect(sent.length - started).toBe(1);
    });

    it("search sends query, page and size, and answers a page of tokens", async () => {
      const { batch, ids } = await createBatch(3);
      const found = await backend.tokens.search({ query: `metadata.batch:${batch}`, page: 1, size: 2 });
      expect(lastSent()).toMatchObject({ method: "POST", url: `${server.url}/tokens/search` });
      expect(wireBody()).toEqual({ query: `metadata.batch:${batch}`, page: 1, size: 2 });
      expect(found.pagination).toEqual({ totalItems: 3, pageNumber: 1, pageSize: 2, totalPages: 2 });
      expect(found.data.map((token) => token.id)).toEqual(ids.slice(0, 2));

      const ssn = await backend.tokens.create({
        type: "social_security_number",
        data: "123-45-6789",
        metadata: { batch },
      });
      const byData = await support.tokens.search({ query: `data:6789 AND metadata.batch:${batch}` });
      expect(byData.data).toEqual([
        expect.objectContaining({ id: ssn.id, data: "XXX-XX-6789", searchIndexes: ssn.searchIndexes }),
      ]);

      expect((await backend.tokens.search()).pagination.totalItems).toBeGreaterThanOrEqual(4);
      expect(wireBody()).toEqual({});

      const invalid = await rejectionOf(
        backend.tokens.search({ query: "colour:red" }),
        TesseraValidationError,
      );
      expect(invalid.errors?.query?.[0]).toMatch(/colour/);
    });

    it("searchAll yields every match of every page", async () => {
      const { batch, ids } = await createBatch(5);
      const before = sent.length;
      const seen: string[] = [];
      for await (const token of backend.tokens.searchAll({ query: `metadata.batch:${batch}`, size: 2 })) {
        seen.push(token.id);
      }
      expect(seen).toEqual(ids);
      expect(sent.slice(before).map((request) => JSON.parse(request.body ?? "").page)).toEqual([1, 2, 3]);
    });
  });

  describe("tokenize", () => {
    it("keeps the body's shape: token requests become tokens, other leaves token ids, the caller's keys stay", async () => {
      const body = {
        customer: {
          fullName: "Jane Doe",
          ssn: {
            type: "social_security_number",
            data: "123-45-6789",
            metadata: { sourceSystem: "crm" },
            searchIndexes: ["{{ data | last4 }}"],
          },
        },
        phones: ["+1 555 0100", null],
        age: 42,
        vip: true,
      } as const;
      const result = await backend.tokenize(body);

      expect(wireBody()).toEqual({
        customer: {
          fullName: "Jane Doe",
          ssn: {
            type: "social_security_number",
            data: "123-45-6789",
            metadata: { sourceSystem: "crm" },
            search_indexes: ["{{ data | last4 }}"],
          },
        },
        phones: ["+1 555 0100", null],
        age: 42,
        vip: true,
      });
      expect(result).toEqual({
        customer: {
          fullName: expect.stringMatching(UUID),
          ssn: expect.objectContaining({
            id: expect.stringMatching(UUID),
            type: "social_security_number",
            tenantId: backendApp.tenantId,
            data: "123-45-6789",
            metadata: { sourceSystem: "crm" },
            searchIndexes: ["{{ data | last4 }}"],
            containers: ["/pii/high/"],
            createdBy: backendApp.id,
          }),
        },
        phones: [expect.stringMatching(UUID), null],
        age: expect.stringMatching(UUID),
        vip: expect.stringMatching(UUID),
      });
      const ssnId: string = result.customer.ssn.id;
      expect(await backend.tokens.get(ssnId)).toEqual(result.customer.ssn);
      expect((await backend.tokens.get(result.age)).data).toBe(42);
      expect((await backend.tokens.get(result.customer.fullName)).data).toBe("Jane Doe");
    });

    it("takes one token request, or an array", async () => {
      const single = await backend.tokenize({ type: "card_number", data: "4111111111111111" });
      expect(single).toMatchObject({
        type: "card_number",
        data: "4111111111111111",
        tenantId: backendApp.tenantId,
      });

      const [id, token] = await backend.tokenize(["plain", { type: "token", data: { snake_key: 1 } }]);
      expect(id).toMatch(UUID);
      expect(token).toMatchObject({ type: "token", data: { snake_key: 1 }, containers: ["/general/high/"] });
    });

    it("fails as a whole with the failing request's place", async () => {
      const error = await rejectionOf(
        backend.tokenize({ ok: "fine", bad: [{ type: "card_number", data: "4242424242424241" }] }),
        TesseraValidationError,
      );
      expect(error.errors).toEqual({ "bad[0].data": ["fails the Luhn check"] });
    });
  });

  describe("detokenize", () => {
    it("replaces expressions with the data and returns the caller's JSON untouched otherwise", async () => {
      const card = await backend.tokens.create({ type: "card", data: CARD });
      const ssn = await backend.tokens.create({ type: "social_security_number", data: "123-45-6789" });
      const body = {
        cardData: `{{ ${card.id} }}`,
        text: `SSN {{ ${ssn.id} }}`,
        kept: [7, "plain", { snake_key: `{{${ssn.id}}}` }],
      };
      const result = await backend.detokenize<{ cardData: typeof CARD; text: string }>(body);
      expect(wireBody()).toEqual(body);
      expect(result).toEqual({
        cardData: CARD,
        text: "SSN 123-45-6789",
        kept: [7, "plain", { snake_key: "123-45-6789" }],
      });
      expect(result.cardData.expiration_month).toBe(12);

      expect(await support.detokenize({ cardData: `{{ ${card.id} }}` })).toEqual({
        cardData: { number: "XXXXXXXXXXXX4242", expiration_month: 12, expiration_year: 2030 },
      });
    });

    it("answers 400 for an unknown token and 403 for data the caller may not see", async () => {
      const unknown = await rejectionOf(
        backend.detokenize({ a: "{{ no-such-token }}" }),
        TesseraValidationError,
      );
      expect(unknown.errors).toBeDefined();
      expect(JSON.stringify(unknown.body)).toContain("no-such-token");

      const created = await backend.tokens.create({ data: "hidden" });
      const forbidden = await rejectionOf(
        redacted.detokenize({ a: `{{ ${created.id} }}` }),
        TesseraForbiddenError,
      );
      expect(forbidden.detail).toMatch(/redacts/);
    });
  });

  describe("errors", () => {
    it("400: a TesseraValidationError with every invalid field", async () => {
      const error = await rejectionOf(
        backend.tokens.create({ type: "card_number", data: "4242424242424241", containers: ["pci"] }),
        TesseraValidationError,
      );
      expect(error).toMatchObject({ status: 400, type: "urn:tessera:problem:validation-failed" });
      expect(error.errors).toEqual({
        data: ["fails the Luhn check"],
        "containers[0]": [expect.stringMatching(/leading and a trailing slash/)],
      });
    });

    it("403: a TesseraForbiddenError for a permission the key lacks", async () => {
      const error = await rejectionOf(support.tokens.create({ data: "x" }), TesseraForbiddenError);
      expect(error).toMatchObject({ status: 403, type: "urn:tessera:problem:forbidden" });
    });

    it("409: a TesseraConflictError for a token id that is taken", async () => {
      const id = `taken-${randomBytes(4).toString("hex")}`;
      await backend.tokens.create({ id, data: "first" });
      const error = await rejectionOf(backend.tokens.create({ id, data: "second" }), TesseraConflictError);
      expect(error).toBeInstanceOf(TesseraError);
      expect(error).toMatchObject({
        name: "TesseraConflictError",
        status: 409,
        type: "urn:tessera:problem:conflict",
      });
    });

    it("413: a plain TesseraError for a status without a class of its own", async () => {
      const error = await rejectionOf(backend.tokens.create({ data: "x".repeat(1_100_000) }), TesseraError);
      expect(error.constructor).toBe(TesseraError);
      expect(error).toMatchObject({
        name: "TesseraError",
        status: 413,
        type: "urn:tessera:problem:payload-too-large",
      });
    });
  });
});
