import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";

const CARD = "4242424242424242";
const SSN = "123-45-6789";

describe.skipIf(STORE_UNAVAILABLE)("Tokens API", () => {
  let server: TestServer;
  /** Reads, writes, uses everywhere; reveals /pci/ and masks the rest. */
  let backend: string;
  /** Only top-level permissions: implicit mask everywhere (token:use reveals). */
  let plain: string;
  /** Redacts /pii/ and may only read it. */
  let redactor: string;
  /** Public key: may create into /pci/ only. */
  let collector: string;

  async function application(body: unknown): Promise<string> {
    const response = await server.request("POST", "/applications", { body });
    expect(response.status, response.text).toBe(201);
    return response.body.key as string;
  }

  beforeAll(async () => {
    server = await startTestServer();
    backend = await application({
      name: "backend",
      type: "private",
      rules: [
        {
          priority: 1,
          container: "/pci/",
          transform: "reveal",
          permissions: ["token:read", "token:create", "token:update", "token:delete"],
        },
        {
          priority: 2,
          container: "/",
          transform: "mask",
          permissions: ["token:read", "token:create", "token:update", "token:delete", "token:search"],
        },
      ],
    });
    plain = await application({
      name: "plain",
      type: "private",
      permissions: ["token:create", "token:read", "token:update", "token:delete", "token:use"],
    });
    redactor = await application({
      name: "redactor",
      type: "private",
      rules: [{ priority: 1, container: "/pii/", transform: "redact", permissions: ["token:read"] }],
    });
    collector = await application({
      name: "collector",
      type: "public",
      rules: [{ priority: 1, container: "/pci/", transform: "mask", permissions: ["token:create"] }],
    });
  });
  afterAll(() => server?.close());

  const create = async (body: unknown, key = backend) => {
    const response = await server.request("POST", "/tokens", { key, body });
    expect(response.status, response.text).toBe(201);
    return response.body;
  };
  const count = async () =>
    (await server.request("GET", "/tokens?size=1", { key: backend })).body.pagination.total_items as number;

  describe("create", () => {
    it("stores each type with its defaults and shows data through the caller's rule", async () => {
      const card = await create({ type: "card_number", data: CARD, metadata: { customer: "Alice" } });
      expect(card).toMatchObject({
        id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
        type: "card_number",
        data: CARD,
        containers: ["/pci/high/"],
        mask: "{{ data | reveal_last: 4 }}",
        metadata: { customer: "Alice" },
        fingerprint: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        fingerprint_expression: "{{ data }}",
        search_indexes: [],
        created_at: expect.any(String),
      });
      expect(card).not.toHaveProperty("modified_at");

      const ssn = await create({ type: "social_security_number", data: SSN });
      expect(ssn).toMatchObject({
        data: "XXX-XX-6789",
        containers: ["/pii/high/"],
        search_indexes: ["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"],
        fingerprint_expression: "{{ data | remove: '-' }}",
      });

      const bank = await create({
        type: "bank",
        data: { routing_number: "021000021", account_number: "1234567890" },
      });
      expect(bank).toMatchObject({
        containers: ["/bank/high/"],
        data: { routing_number: "021000021", account_number: "XXXXXX7890" },
      });

      const generic = await create({ data: { anything: ["goes", 1] } });
      expect(generic).toMatchObject({ type: "token", containers: ["/general/high/"] });
      expect(generic).not.toHaveProperty("data"); // masked without a mask: dropped
      expect(generic).not.toHaveProperty("mask");
    });

    it("takes caller ids and alias expressions, and refuses a duplicate id with 409", async () => {
      const chosen = await create({
        id: "customer-42-card",
        type: "card_number",
        data: "5555555555554444",
        privacy: { classification: "pci" },
      });
      expect(chosen.id).toBe("customer-42-card");
      const before = await count();
      expectProblem(
        await server.request("POST", "/tokens", {
          key: backend,
          body: { id: "customer-42-card", data: "x" },
        }),
        409,
        { code: "conflict" },
      );
      expect(await count()).toBe(before);

      const alias = await create({
        id: "{{ data | alias_card: true, true }}",
        type: "card_number",
        data: CARD,
      });
      expect(alias.id).toMatch(/^42424242\d{4}4242$/);
      expect(alias.id).not.toBe(CARD);
      expectProblem(
        await server.request("POST", "/tokens", { key: backend, body: { id: "ab", data: "x" } }),
        400,
        {
          errors: { id: ["must be 3 to 400 characters of well-formed text without control characters"] },
        },
      );
    });

    it.each<[string, unknown, Record<string, string[] | undefined>]>([
      [
        "a Luhn failure",
        { type: "card_number", data: "4242424242424241" },
        { data: ["fails the Luhn check"] },
      ],
      [
        "an unknown type",
        { type: "passport", data: "x" },
        { type: [expect.stringMatching(/^must be one of: token/) as never] },
      ],
      ["missing data", { type: "token" }, { data: ["is required"] }],
      ["null data", { type: "token", data: null }, { data: ["is required"] }],
      [
        "a bad card field",
        { type: "card", data: { number: CARD, expiration_month: 13 } },
        { "data.expiration_month": ["must be an integer from 1 to 12"] },
      ],
      [
        "search indexes on a card number",
        { type: "card_number", data: CARD, search_indexes: ["{{ data | last4 }}"] },
        {
          search_indexes: [
            "are accepted only for token, social_security_number and employer_id_number tokens",
          ],
        },
      ],
      [
        "a search index that yields nothing",
        { data: { a: "" }, search_indexes: ["{{ data.a }}"] },
        { "search_indexes[0]": ["must evaluate to one non-empty value"] },
      ],
      [
        "an unknown filter",
        { data: "x", search_indexes: ["{{ data | shout }}"] },
        { "search_indexes[0]": [expect.stringContaining("shout") as never] },
      ],
      ["an include", { data: "x", mask: "{% include 'secrets' %}" }, { mask: [expect.any(String) as never] }],
      [
        "a bad container",
        { data: "x", containers: ["pci"] },
        { "containers[0]": [expect.stringContaining("leading and a trailing slash") as never] },
      ],
      ["no container", { data: "x", containers: [] }, { containers: ["must hold at least one container"] }],
      [
        "a container with a dot segment",
        { data: "x", containers: ["/pci/", "/pci/../pii/"] },
        { "containers[1]": ["must not have . or .. as a segment"] },
      ],
      [
        "a container ending in a dot segment",
        { data: "x", containers: ["/pci/./"] },
        { "containers[0]": ["must not have . or .. as a segment"] },
      ],
      [
        "a blank search index",
        { data: "x", search_indexes: ["{{ data }}", " \t "] },
        { "search_indexes[1]": ["must not be blank"], "search_indexes[0]": undefined },
      ],
      ["an unknown field", { data: "x", contaners: ["/a/"] }, { contaners: ["is not a known field"] }],
      [
        "an id with a lone surrogate",
        { id: "tok-\ud800-x", data: "x" },
        { id: ["must be 3 to 400 characters of well-formed text without control characters"] },
      ],
      [
        "a leap-second expiry",
        { data: "x", expires_at: "2030-12-31T23:59:60Z" },
        { expires_at: ["must be a valid date-time"] },
      ],
      [
        "a wrongly typed field",
        { data: "x", deduplicate_token: "yes" },
        { deduplicate_token: ["must be a boolean"] },
      ],
      [
        "a past expiry",
        { data: "x", expires_at: "2001-01-01T00:00:00Z" },
        { expires_at: ["must be in the future"] },
      ],
      ["oversized data", { data: "x".repeat(40_000) }, { data: ["must be at most 32768 bytes as JSON"] }],
      [
        "metadata that is not a string",
        { data: "x", metadata: { a: 1 } },
        { "metadata.a": ["must be a string"] },
      ],
    ])("refuses %s with 400 naming the field, and writes nothing", async (_case, body, errors) => {
      const before = await count();
      const response = await server.request("POST", "/tokens", { key: backend, body });
      expectProblem(response, 400, { code: "validation-failed", errors });
      expect(response.text).not.toContain("4242424242424241");
      expect(await count()).toBe(before);
    });

    it("commits concurrent creates together, failing only the one that conflicts", async () => {
      const id = `concurrent-${Date.now()}`;
      const bodies = Array.from({ length: 20 }, (_, i) =>
        i === 7 || i === 13 ? { id, data: `dup-${i}` } : { data: `concurrent-${i}` },
      );
      const responses = await Promise.all(
        bodies.map((body) => server.request("POST", "/tokens", { key: backend, body })),
      );
      const statuses = responses.map((r) => r.status).sort();
      expect(statuses.filter((s) => s === 201)).toHaveLength(19);
      const conflict = responses.find((r) => r.status === 409)!;
      expectProblem(conflict, 409, { code: "conflict" });
      for (const response of responses.filter((r) => r.status === 201)) {
        expect((await server.request("GET", `/tokens/${response.body.id}`, { key: backend })).status).toBe(
          200,
        );
      }
    });

    it("deduplicates 20 concurrent creates of one new value into exactly one token", async () => {
      const ssn = "321-54-9876";
      const body = { type: "social_security_number", data: ssn, deduplicate_token: true };
      const responses = await Promise.all(
        Array.from({ length: 20 }, () => server.request("POST", "/tokens", { key: backend, body })),
      );
      for (const response of responses) expect(response.status, response.text).toBe(201);
      const ids = new Set(responses.map((r) => r.body.id as string));
      expect(ids.size).toBe(1);
      expect(responses.filter((r) => r.body._extras?.deduplicated === true)).toHaveLength(19);
      const [id] = ids;
      for (const response of responses) expect(response.body).toMatchObject({ id, data: "XXX-XX-9876" });
      const found = await server.request("POST", "/tokens/search", {
        key: backend,
        body: { query: `data:"${ssn}"` },
      });
      expect(found.body.pagination.total_items).toBe(1);
    });

    it("deduplicates concurrent bulk creates holding the same new values in different orders", async () => {
      const values = ["456-12-7890", "456-12-7891", "456-12-7892"];
      const request = (order: string[]) =>
        server.request("POST", "/tokenize", {
          key: backend,
          body: order.map((data) => ({ type: "social_security_number", data, deduplicate_token: true })),
        });
      const orders = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? values : [...values].reverse()));
      const responses = await Promise.all(orders.map(request));
      for (const response of responses) expect(response.status, response.text).toBe(200);
      const idOf = new Map<string, Set<string>>(values.map((v) => [v, new Set()]));
      responses.forEach((response, i) =>
        orders[i]!.forEach((value, j) => idOf.get(value)!.add(response.body[j].id as string)),
      );
      for (const value of values) expect(idOf.get(value)!.size, value).toBe(1);
      const ids = new Set([...idOf.values()].flatMap((set) => [...set]));
      expect(ids.size).toBe(3);
    });

    it("refuses to create into a container the caller holds no token:create rule for", async () => {
      expect((await create({ type: "card_number", data: CARD }, collector)).data).toBe("XXXXXXXXXXXX4242");
      expectProblem(
        await server.request("POST", "/tokens", {
          key: collector,
          body: { type: "social_security_number", data: SSN },
        }),
        403,
        { code: "forbidden", detail: /token:create/ },
      );
      expectProblem(
        await server.request("POST", "/tokens", {
          key: collector,
          body: { type: "card_number", data: CARD, containers: ["/pci/", "/pii/"] },
        }),
        403,
      );
    });

    it("deduplicates by fingerprint, showing only identity to a caller that may not read it", async () => {
      const first = await create({
        type: "social_security_number",
        data: "987-65-4321",
        deduplicate_token: true,
      });
      const again = await create({
        type: "social_security_number",
        data: "987654321",
        deduplicate_token: true,
      });
      expect(again.id).toBe(first.id);
      expect(again._extras).toEqual({ deduplicated: true });
      expect(again.data).toBe("XXX-XX-4321");

      const carded = await create({ type: "card_number", data: "378282246310005" }, backend);
      const blind = await create(
        { type: "card_number", data: "378282246310005", deduplicate_token: true },
        collector,
      );
      expect(blind).toEqual({
        id: carded.id,
        type: "card_number",
        tenant_id: carded.tenant_id,
        fingerprint: carded.fingerprint,
        containers: ["/pci/high/"],
        _extras: { deduplicated: true },
      });
    });
  });

  describe("read, update, delete", () => {
    it("applies reveal, mask and redact, and answers 404 outside every rule", async () => {
      const ssn = await create({ type: "social_security_number", data: SSN });
      const card = await create({ type: "card_number", data: CARD });
      expect((await server.request("GET", `/tokens/${card.id}`, { key: backend })).body.data).toBe(CARD);
      expect((await server.request("GET", `/tokens/${card.id}`, { key: plain })).body.data).toBe(
        "XXXXXXXXXXXX4242",
      );
      const redacted = await server.request("GET", `/tokens/${ssn.id}`, { key: redactor });
      expect(redacted.status).toBe(200);
      expect(redacted.body).not.toHaveProperty("data");
      expect(redacted.body.id).toBe(ssn.id);
      expectProblem(await server.request("GET", `/tokens/${card.id}`, { key: redactor }), 404, {
        code: "not-found",
      });
      expectProblem(await server.request("GET", "/tokens/no-such-token", { key: backend }), 404);
    });

    it("merge-patches data, metadata and mask, replaces the rest, and sets modified_*", async () => {
      const card = await create({
        type: "card",
        data: { number: CARD, expiration_month: 1, expiration_year: 2030 },
        metadata: { a: "1", b: "2" },
      });
      const bootstrapless = await server.request("GET", "/applications/key");
      expect(bootstrapless.status).toBe(200);
      const response = await server.request("PATCH", `/tokens/${card.id}`, {
        key: backend,
        contentType: "application/merge-patch+json",
        body: {
          data: { expiration_month: 6, cvc: "123" },
          metadata: { a: null, c: "3" },
          mask: { expiration_year: null },
        },
      });
      expect(response.status, response.text).toBe(200);
      expect(response.body).toMatchObject({
        data: { number: CARD, expiration_month: 6, expiration_year: 2030, cvc: "123" },
        metadata: { b: "2", c: "3" },
        mask: {
          number: "{{ data.number | reveal_last: 4 }}",
          expiration_month: "{{ data.expiration_month }}",
        },
        modified_by: expect.any(String),
        modified_at: expect.any(String),
      });
      expect(response.body.fingerprint).toBe(card.fingerprint);
      const read = await server.request("GET", `/tokens/${card.id}`, { key: plain });
      // A mask that is one expression keeps the value's type (the month stays a number).
      expect(read.body.data).toEqual({ number: "XXXXXXXXXXXX4242", expiration_month: 6 });
    });

    it("requires application/merge-patch+json, validates the patch and changes nothing on failure", async () => {
      const token = await create({ type: "card_number", data: CARD, metadata: { keep: "me" } });
      expectProblem(
        await server.request("PATCH", `/tokens/${token.id}`, {
          key: backend,
          body: { metadata: { x: "y" } },
        }),
        415,
        { code: "unsupported-media-type", detail: /merge-patch/ },
      );
      expectProblem(
        await server.request("PATCH", `/tokens/${token.id}`, {
          key: backend,
          contentType: "application/merge-patch+json",
          body: { data: "4242424242424241", metadata: { x: "y" } },
        }),
        400,
        { errors: { data: ["fails the Luhn check"] } },
      );
      expectProblem(
        await server.request("PATCH", `/tokens/${token.id}`, {
          key: backend,
          contentType: "application/merge-patch+json",
          rawBody: "{not json",
        }),
        400,
        { code: "malformed-request" },
      );
      expectProblem(
        await server.request("PATCH", `/tokens/${token.id}`, {
          key: backend,
          contentType: "application/merge-patch+json",
          body: { metdata: { x: "y" } },
        }),
        400,
        { errors: { metdata: ["is not a known field"] } },
      );
      const unchanged = await server.request("GET", `/tokens/${token.id}`, { key: backend });
      expect(unchanged.body.metadata).toEqual({ keep: "me" });
      expect(unchanged.body).not.toHaveProperty("modified_at");
    });

    it("refuses dot segments in containers and blank search indexes on update too", async () => {
      // In /pci/, which backend reveals: it may change the token's search indexes.
      const token = await create({ data: "x", search_indexes: ["{{ data }}"], containers: ["/pci/"] });
      const patch = (body: unknown) =>
        server.request("PATCH", `/tokens/${token.id}`, {
          key: backend,
          contentType: "application/merge-patch+json",
          body,
        });
      expectProblem(await patch({ containers: ["/pci/../pii/"] }), 400, {
        errors: { "containers[0]": ["must not have . or .. as a segment"] },
      });
      expectProblem(await patch({ search_indexes: ["   "] }), 400, {
        errors: { "search_indexes[0]": ["must not be blank"] },
      });
      const unchanged = await server.request("GET", `/tokens/${token.id}`, { key: backend });
      expect(unchanged.body).toMatchObject({ containers: ["/pci/"], search_indexes: ["{{ data }}"] });
      expect(unchanged.body).not.toHaveProperty("modified_at");
    });

    it("needs token:update on every new container", async () => {
      const limited = await application({
        name: "limited",
        type: "private",
        rules: [
          {
            priority: 1,
            container: "/pci/",
            transform: "mask",
            permissions: ["token:read", "token:update", "token:create"],
          },
        ],
      });
      const token = await create({ type: "card_number", data: CARD }, limited);
      const patch = (containers: string[]) =>
        server.request("PATCH", `/tokens/${token.id}`, {
          key: limited,
          contentType: "application/merge-patch+json",
          body: { containers },
        });
      expectProblem(await patch(["/pii/"]), 403, { detail: /token:update/ });
      const moved = await patch(["/pci/low/", "/PCI/Other/"]);
      expect(moved.status, moved.text).toBe(200);
      expect(moved.body.containers).toEqual(["/pci/low/", "/pci/other/"]);
    });

    it("deletes with 204, then answers 404; outside the rules a delete is a 404 too", async () => {
      const token = await create({ type: "social_security_number", data: SSN });
      const cardDeleter = await application({
        name: "card deleter",
        type: "private",
        rules: [{ priority: 1, container: "/pci/", transform: "redact", permissions: ["token:delete"] }],
      });
      expectProblem(await server.request("DELETE", `/tokens/${token.id}`, { key: cardDeleter }), 404);
      const deleted = await server.request("DELETE", `/tokens/${token.id}`, { key: backend });
      expect(deleted.status).toBe(204);
      expectProblem(await server.request("GET", `/tokens/${token.id}`, { key: backend }), 404);
      expectProblem(await server.request("DELETE", `/tokens/${token.id}`, { key: backend }), 404);
    });
  });

  describe("list", () => {
    it("never decrypts a token it does not show the data of", async () => {
      const tag = `sealed-${Date.now()}`;
      const ssn = await create({ type: "social_security_number", data: SSN, metadata: { batch: tag } });
      const plainToken = await create({ data: "no mask", metadata: { batch: tag } });
      const redactingSearcher = await application({
        name: "redacting searcher",
        type: "private",
        rules: [
          { priority: 1, container: "/", transform: "redact", permissions: ["token:read", "token:search"] },
        ],
      });
      // Both ciphertexts replaced by bytes that fail authentication: any attempt to decrypt them throws.
      const store = server.database.open();
      try {
        await store.db
          .updateTable("tokens")
          .set({ ciphertext: Buffer.alloc(64, 7).toString("base64") })
          .where("id", "in", [ssn.id, plainToken.id])
          .execute();
        const check = async (key: string, shown: { id: string }) => {
          const listed = await server.request("GET", `/tokens?metadata.batch=${tag}`, { key });
          expect(listed.status, listed.text).toBe(200);
          expect(listed.body.data.map((t: { id: string }) => t.id)).toContain(shown.id);
          for (const token of listed.body.data) expect(token).not.toHaveProperty("data");
          const read = await server.request("GET", `/tokens/${shown.id}`, { key });
          expect(read.status, read.text).toBe(200);
          expect(read.body).not.toHaveProperty("data");
        };
        // Redacted: no data shown, so none decrypted.
        await check(redactingSearcher, ssn);
        const found = await server.request("POST", "/tokens/search", {
          key: redactingSearcher,
          body: { query: `metadata.batch:${tag}` },
        });
        expect(found.status, found.text).toBe(200);
        expect(found.body.pagination.total_items).toBe(2);
        // Masked, but the token has no mask: nothing to show either.
        expect((await server.request("GET", `/tokens/${plainToken.id}`, { key: plain })).status).toBe(200);
        // Where the data is shown, the corruption is found: the tokens above were really never decrypted.
        expectProblem(await server.request("GET", `/tokens/${ssn.id}`, { key: plain }), 500, {
          code: "internal",
        });
      } finally {
        await store.db.deleteFrom("tokens").where("id", "in", [ssn.id, plainToken.id]).execute();
        await store.close();
      }
    });

    it("filters by id, type and metadata (case-insensitive), newest first, only what the caller may read", async () => {
      const tag = `list-${Date.now()}`;
      const a = await create({ type: "card_number", data: CARD, metadata: { batch: tag, who: "Bob" } });
      const b = await create({
        type: "social_security_number",
        data: SSN,
        metadata: { batch: tag, who: "bob" },
      });
      const c = await create({ data: "plain", metadata: { batch: tag, who: "Carol" } });

      const byTag = await server.request("GET", `/tokens?metadata.batch=${tag}`, { key: backend });
      expect(byTag.body.data.map((t: { id: string }) => t.id)).toEqual([c.id, b.id, a.id]);
      expect(byTag.body.pagination.total_items).toBe(3);

      const bobs = await server.request("GET", `/tokens?metadata.batch=${tag}&metadata.who=BOB`, {
        key: backend,
      });
      expect(bobs.body.data.map((t: { id: string }) => t.id)).toEqual([b.id, a.id]);

      const ssns = await server.request("GET", `/tokens?metadata.batch=${tag}&type=social_security_number`, {
        key: backend,
      });
      expect(ssns.body.data.map((t: { id: string }) => t.id)).toEqual([b.id]);

      const byIds = await server.request("GET", `/tokens?id=${a.id}&id=${c.id}`, { key: backend });
      expect(byIds.body.data.map((t: { id: string }) => t.id)).toEqual([c.id, a.id]);

      const visible = await server.request("GET", `/tokens?metadata.batch=${tag}`, { key: redactor });
      expect(visible.body.pagination.total_items).toBe(1);
      expect(visible.body.data[0].id).toBe(b.id);
      expect(visible.body.data[0]).not.toHaveProperty("data");

      const paged = await server.request("GET", `/tokens?metadata.batch=${tag}&size=2&page=2`, {
        key: backend,
      });
      expect(paged.body.data.map((t: { id: string }) => t.id)).toEqual([a.id]);
      expect(paged.body.pagination).toEqual({ total_items: 3, page_number: 2, page_size: 2, total_pages: 2 });
    });
  });

  describe("tokenize and detokenize", () => {
    it("keeps the request's shape and creates everything in one go", async () => {
      const response = await server.request("POST", "/tokenize", {
        key: backend,
        body: {
          name: "Alice",
          cards: [{ type: "card_number", data: CARD }, 42],
          nested: { ssn: { type: "social_security_number", data: SSN }, nothing: null },
        },
      });
      expect(response.status, response.text).toBe(200);
      const body = response.body;
      expect(body.name).toEqual(expect.any(String));
      expect(body.cards[0]).toMatchObject({ type: "card_number", data: CARD });
      expect(body.cards[1]).toEqual(expect.any(String));
      expect(body.nested.ssn).toMatchObject({ type: "social_security_number", data: "XXX-XX-6789" });
      expect(body.nested.nothing).toBeNull();
      const alice = await server.request("GET", `/tokens/${body.name}`, { key: plain });
      expect(alice.body).toMatchObject({ type: "token", containers: ["/general/high/"] });
      const revealer = await application({
        name: "revealer",
        type: "private",
        rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:read"] }],
      });
      const detokenized = await server.request("POST", "/detokenize", {
        key: revealer,
        body: { who: `{{ ${body.name} }}`, n: `{{${body.cards[1]}}}` },
      });
      expect(detokenized.status).toBe(200);
      expect(detokenized.body).toEqual({ who: "Alice", n: 42 });
    });

    it("is all or nothing, naming where the bad request sits", async () => {
      const before = await count();
      const response = await server.request("POST", "/tokenize", {
        key: backend,
        body: { ok: "fine", bad: [{ type: "card_number", data: "4242424242424241" }] },
      });
      expectProblem(response, 400, { errors: { "bad[0].data": ["fails the Luhn check"] } });
      expect(await count()).toBe(before);
    });

    it("replaces whole-string expressions with the data and interpolates inside strings", async () => {
      const card = await create({
        type: "card",
        data: { number: CARD, expiration_month: 4, expiration_year: 2031 },
      });
      const ssn = await create({ type: "social_security_number", data: SSN });
      const response = await server.request("POST", "/detokenize", {
        key: backend,
        body: { card: `{{ ${card.id} }}`, text: `SSN {{ ${ssn.id} }}!`, list: [`{{${card.id}}}`], keep: 7 },
      });
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({
        card: { number: CARD, expiration_month: 4, expiration_year: 2031 },
        text: "SSN XXX-XX-6789!",
        list: [{ number: CARD, expiration_month: 4, expiration_year: 2031 }],
        keep: 7,
      });
      expectProblem(
        await server.request("POST", "/detokenize", { key: backend, body: { x: "{{ missing-token }}" } }),
        400,
        {
          errors: { body: ["token missing-token does not exist"] },
        },
      );
      expectProblem(
        await server.request("POST", "/detokenize", { key: redactor, body: { x: `{{ ${card.id} }}` } }),
        403,
      );
      expectProblem(
        await server.request("POST", "/detokenize", { key: redactor, body: { x: `{{ ${ssn.id} }}` } }),
        403,
        {
          detail: /redacts/,
        },
      );
    });
  });

  describe("edges", () => {
    it("bounds metadata keys and entries, and a null metadata patch clears it", async () => {
      expectProblem(
        await server.request("POST", "/tokens", {
          key: backend,
          body: { data: "x", metadata: { ["k".repeat(129)]: "v" } },
        }),
        400,
        { errors: { metadata: ["must be at most 128 characters"] } },
      );
      const many = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, "v"]));
      const token = await create({ data: "x", metadata: many });
      const patch = (body: unknown) =>
        server.request("PATCH", `/tokens/${token.id}`, {
          key: backend,
          contentType: "application/merge-patch+json",
          body,
        });
      expectProblem(await patch({ metadata: { extra: "one too many" } }), 400, {
        errors: { metadata: ["must hold at most 50 entries"] },
      });
      const cleared = await patch({ metadata: null });
      expect(cleared.status, cleared.text).toBe(200);
      expect(cleared.body.metadata).toEqual({});
    });

    it("lets a fingerprint expression use metadata", async () => {
      const a = await create({
        data: "same",
        metadata: { user: "u1" },
        fingerprint_expression: "{{ data }}-{{ metadata.user }}",
      });
      const b = await create({
        data: "same",
        metadata: { user: "u2" },
        fingerprint_expression: "{{ data }}-{{ metadata.user }}",
      });
      expect(a.fingerprint).not.toBe(b.fingerprint);
    });

    it("refuses filters that would publish the data", async () => {
      for (const filter of ["base64_encode", "sha256"]) {
        const response = await server.request("POST", "/tokens", {
          key: backend,
          body: { data: "x", mask: `{{ data | ${filter} }}` },
        });
        expectProblem(response, 400, { errors: { mask: [expect.stringContaining(filter) as never] } });
      }
    });

    it("answers JSON for a bare string body to tokenize and detokenize", async () => {
      const tokenized = await server.request("POST", "/tokenize", { key: backend, body: "just a string" });
      expect(tokenized.status).toBe(200);
      expect(tokenized.headers.get("content-type")).toMatch(/^application\/json/);
      expect(typeof tokenized.body).toBe("string");
      const plain = await server.request("POST", "/detokenize", { key: backend, body: "no expressions" });
      expect(plain.text).toBe('"no expressions"');
    });

    it("refuses detokenize expressions with unknown filters (detokenize.test.ts holds every form)", async () => {
      const token = await create({ type: "card_number", data: CARD });
      expect(
        (
          await server.request("POST", "/detokenize", {
            key: backend,
            body: { x: `{{ ${token.id} | last4 }}` },
          })
        ).body,
      ).toEqual({ x: "4242" });
      expectProblem(
        await server.request("POST", "/detokenize", {
          key: backend,
          body: { x: `{{ ${token.id} | sha256 }}` },
        }),
        400,
        {
          errors: {
            body: [`{{ ${token.id} | sha256 }} has invalid filters: unknown filter 'sha256'`],
          },
        },
      );
    });

    it("answers hostile shapes with 400s: prototype names, deep nesting, NUL, missing bodies", async () => {
      // Built as text: the test's own JSON.stringify would overflow first.
      const deep = (levels: number) => `${'{"a":'.repeat(levels)}"x"${"}".repeat(levels)}`;
      expectProblem(
        await server.request("POST", "/tokens", { key: backend, rawBody: '{"data":"x","constructor":"y"}' }),
        400,
        {
          errors: { constructor: ["is not a known field"] },
        },
      );
      expectProblem(
        await server.request("POST", "/tokens", { key: backend, rawBody: `{"data":${deep(5000)}}` }),
        400,
        {
          errors: { data: ["must not nest deeper than 32 levels"] },
        },
      );
      expectProblem(await server.request("POST", "/tokenize", { key: backend, rawBody: deep(5000) }), 400, {
        errors: { body: ["must not nest deeper than 32 levels"] },
      });
      expectProblem(await server.request("POST", "/detokenize", { key: backend }), 400, {
        errors: { body: ["is required"] },
      });
      expectProblem(await server.request("GET", "/tokens?metadata.%00=x", { key: backend }), 400);
      expectProblem(await server.request("GET", "/tokens/a%00b", { key: backend }), 400, {
        errors: { id: ["must not contain control characters"] },
      });
      expectProblem(
        await server.request("POST", "/detokenize", { key: backend, body: { x: "{{ a\u0000b }}" } }),
        400,
        {
          errors: {
            body: [
              "{{ a\u0000b }} is not supported: detokenize takes {{ <token id> }} or {{ token: <token id> }}, each optionally | filters",
            ],
          },
        },
      );
    });

    it("reports every bad request of a tokenize call at once", async () => {
      const response = await server.request("POST", "/tokenize", {
        key: backend,
        body: [
          { type: "card_number", data: CARD, deduplicate_token: "yes" },
          { type: "token", colour: "red", data: "x" },
        ],
      });
      expectProblem(response, 400, {
        errors: { "[0].deduplicate_token": ["must be a boolean"], "[1].colour": ["is not a known field"] },
      });
    });
  });

  describe("expiry", () => {
    it("hides an expired token at once and the sweeper deletes it", async () => {
      const expiresAt = new Date(server.clock.now().getTime() + 60_000).toISOString();
      const token = await create({ data: "short-lived", expires_at: expiresAt });
      expect(token.expires_at).toBe(expiresAt);
      server.clock.advance(61_000);
      expectProblem(await server.request("GET", `/tokens/${token.id}`, { key: backend }), 404);
      expect((await server.request("GET", `/tokens?id=${token.id}`, { key: backend })).body.data).toEqual([]);
      expectProblem(
        await server.request("POST", "/detokenize", { key: backend, body: { x: `{{ ${token.id} }}` } }),
        400,
      );
      const store = server.database.open();
      try {
        const rows = () =>
          store.db
            .selectFrom("tokens")
            .select("id")
            .where("id", "=", token.id)
            .execute()
            .then((r) => r.length);
        await expect.poll(rows, { timeout: 5_000 }).toBe(0);
        const children = await store.db
          .selectFrom("token_container_index")
          .select("token_id")
          .where("token_id", "=", token.id)
          .execute();
        expect(children).toEqual([]);
      } finally {
        await store.close();
      }
    });
  });

  // On SQLite, lookups by id are kept in memory while no token is written (tokens/store.ts); these read every token
  // first, so that the next request would be answered from memory if a change went unnoticed.
  describe("tokens kept in memory", () => {
    const read = (id: string, key = backend) => server.request("GET", `/tokens/${id}`, { key });
    const detokenize = (id: string) =>
      server.request("POST", "/detokenize", {
        key: backend,
        body: { card: `{{ ${id} }}`, n: [`{{ ${id} }}`] },
      });

    it("sees a change and a deletion made by another connection on the very next request", async () => {
      const card = await create({ type: "card_number", data: CARD, metadata: { step: "1" } });
      expect((await read(card.id)).body.metadata).toEqual({ step: "1" });
      expect((await detokenize(card.id)).body).toEqual({ card: CARD, n: [CARD] });
      // As another server or the CLI would: a connection of its own, and no request through this server.
      const other = server.database.open();
      try {
        await other.db
          .updateTable("tokens")
          .set({ metadata: '{"step":"2"}' })
          .where("id", "=", card.id)
          .execute();
        expect((await read(card.id)).body.metadata).toEqual({ step: "2" });
        await other.db.deleteFrom("tokens").where("id", "=", card.id).execute();
      } finally {
        await other.close();
      }
      expectProblem(await read(card.id), 404, { detail: new RegExp(card.id) });
      expectProblem(await detokenize(card.id), 400, {
        errors: { body: [`token ${card.id} does not exist`] },
      });
    });

    it("hides a token read from memory from the moment it expires", async () => {
      const expiresAt = new Date(server.clock.now().getTime() + 60_000).toISOString();
      const token = await create({ type: "card_number", data: CARD, expires_at: expiresAt });
      expect((await read(token.id)).status).toBe(200);
      expect((await detokenize(token.id)).body).toEqual({ card: CARD, n: [CARD] });
      server.clock.advance(60_001);
      expectProblem(await read(token.id), 404, { code: "not-found" });
      expectProblem(await detokenize(token.id), 400, {
        errors: { body: [`token ${token.id} does not exist`] },
      });
    });

    it("answers another tenant's id like a missing one while its owner's read is held", async () => {
      const card = await create({ type: "card_number", data: CARD });
      expect((await read(card.id)).body.data).toBe(CARD);
      const tenant = await server.request("POST", "/tenants", { body: { name: "Reader of others" } });
      const outsider = await server.request("POST", "/applications", {
        key: tenant.body.application.key,
        body: { name: "outsider", type: "private", permissions: ["token:read", "token:use"] },
      });
      expectProblem(await read(card.id, outsider.body.key), 404, { code: "not-found" });
      expectProblem(
        await server.request("POST", "/detokenize", {
          key: outsider.body.key,
          body: { card: `{{ ${card.id} }}` },
        }),
        400,
        { errors: { body: [`token ${card.id} does not exist`] } },
      );
    });
  });

  describe("tenant isolation", () => {
    it("answers another tenant's token ids like missing ones", async () => {
      const token = await create({ type: "card_number", data: CARD });
      const tenant = await server.request("POST", "/tenants", { body: { name: "Other" } });
      const other = await server.request("POST", "/applications", {
        key: tenant.body.application.key,
        body: { name: "thief", type: "private", permissions: ["token:read", "token:update", "token:delete"] },
      });
      const thief = other.body.key as string;
      expectProblem(await server.request("GET", `/tokens/${token.id}`, { key: thief }), 404);
      expectProblem(await server.request("DELETE", `/tokens/${token.id}`, { key: thief }), 404);
      expectProblem(
        await server.request("PATCH", `/tokens/${token.id}`, {
          key: thief,
          contentType: "application/merge-patch+json",
          body: { metadata: { x: "y" } },
        }),
        404,
      );
      expectProblem(
        await server.request("POST", "/detokenize", { key: thief, body: { x: `{{ ${token.id} }}` } }),
        400,
      );
      expect((await server.request("GET", `/tokens?id=${token.id}`, { key: thief })).body.data).toEqual([]);
      expect((await server.request("GET", `/tokens/${token.id}`, { key: backend })).body.data).toBe(CARD);
    });
  });
});
