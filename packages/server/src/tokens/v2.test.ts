import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  STORE_UNAVAILABLE,
  expectProblem,
  startTestServer,
  type TestResponse,
  type TestServer,
} from "../../test/harness.js";

/** GET /v2/tokens and POST /v2/tokens/search (issue 18 item 2, wire-format §3 and §4.3–4.4). */
describe.skipIf(STORE_UNAVAILABLE)("v2 list and search, walked by cursor", () => {
  let server: TestServer;
  /** Reads, searches, creates and deletes everywhere; reveals. */
  let backend: string;
  /** Reads and searches /pci/ only (masked). */
  let pciOnly: string;
  /** The same grant as backend, another Application. */
  let twin: string;
  /** A management key of a second tenant, and a private key there. */
  let otherTenantKey: string;

  async function application(body: unknown, key?: string): Promise<string> {
    const response = await server.request("POST", "/applications", { body, ...(key && { key }) });
    expect(response.status, response.text).toBe(201);
    return response.body.key as string;
  }

  const everywhere = {
    type: "private",
    rules: [
      {
        priority: 1,
        container: "/",
        transform: "reveal",
        permissions: ["token:read", "token:search", "token:create", "token:delete"],
      },
    ],
  };

  beforeAll(async () => {
    server = await startTestServer();
    backend = await application({ name: "backend", ...everywhere });
    twin = await application({ name: "twin", ...everywhere });
    pciOnly = await application({
      name: "pci",
      type: "private",
      rules: [
        { priority: 1, container: "/pci/", transform: "mask", permissions: ["token:read", "token:search"] },
      ],
    });
    const tenant = await server.request("POST", "/tenants", { body: { name: "other" } });
    expect(tenant.status, tenant.text).toBe(201);
    otherTenantKey = await application({ name: "other", ...everywhere }, tenant.body.application.key);
  });
  afterAll(() => server?.close());

  /** Creates tokens in one request, in order; answers their ids. */
  async function createTokens(requests: unknown[], key = backend): Promise<string[]> {
    const response = await server.request("POST", "/tokenize", { key, body: requests });
    expect(response.status, response.text).toBe(200);
    return (response.body as { id: string }[]).map((token) => token.id);
  }

  function listPage(query: Record<string, string>, key = backend): Promise<TestResponse> {
    return server.request("GET", `/v2/tokens?${new URLSearchParams(query).toString()}`, { key });
  }

  function searchPage(body: unknown, key = backend): Promise<TestResponse> {
    return server.request("POST", "/v2/tokens/search", { key, body });
  }

  /** Every page of a walk, by its `next` cursors; checks the envelope of each. */
  async function walk(
    fetchPage: (start: string | undefined) => Promise<TestResponse>,
    size: number,
  ): Promise<{ ids: string[]; pages: number }> {
    const ids: string[] = [];
    let start: string | undefined;
    for (let pages = 1; ; pages += 1) {
      const response = await fetchPage(start);
      expect(response.status, response.text).toBe(200);
      const { pagination, data } = response.body as {
        pagination: { page_size: number; next: string | null };
        data: { id: string }[];
      };
      expect(pagination.page_size).toBe(size);
      expect(data.length).toBeLessThanOrEqual(size);
      ids.push(...data.map((token) => token.id));
      if (pagination.next === null) return { ids, pages };
      expect(pages).toBeLessThan(100);
      // A page followed by another is full: the visibility is in the statement.
      expect(data.length).toBe(size);
      start = pagination.next;
    }
  }

  /** What v1 search answers for the same query, in its order: the reference for every v2 walk. */
  async function v1Ids(query: string, key = backend): Promise<string[]> {
    const response = await server.request("POST", "/tokens/search", { key, body: { query, size: 100 } });
    expect(response.status, response.text).toBe(200);
    return (response.body.data as { id: string }[]).map((token) => token.id);
  }

  it("walks the v2 list to the end, newest first, every token once, each page full", async () => {
    // Created within one millisecond of the manual clock: the order among them comes from the id alone.
    const ids = await createTokens(
      Array.from({ length: 11 }, (_, i) => ({ type: "token", data: `walk-${i}`, containers: ["/walk/"] })),
    );
    server.clock.advance(5);
    const later = await createTokens([{ type: "token", data: "walk-late", containers: ["/walk/deep/"] }]);
    const { ids: walked, pages } = await walk(
      (start) => listPage({ container: "/walk/", size: "4", ...(start && { start }) }),
      4,
    );
    expect(pages).toBe(3);
    expect(walked).toEqual(await v1Ids('container:"/walk/*"'));
    expect(new Set(walked)).toEqual(new Set([...ids, ...later]));
    expect(walked[0]).toBe(later[0]);
  });

  it("carries the longest ids there are through a cursor", async () => {
    // 400 characters of 4-byte UTF-8, and quotes and backslashes, which JSON escapes: the largest place a cursor holds.
    const ids = await createTokens([
      { id: "😀".repeat(200), type: "token", data: "a", containers: ["/long/"] },
      { id: '"\\'.repeat(133) + "x", type: "token", data: "b", containers: ["/long/"] },
      { id: "é".repeat(400), type: "token", data: "c", containers: ["/long/"] },
    ]);
    const { ids: walked } = await walk(
      (start) => listPage({ container: "/long/", size: "1", ...(start && { start }) }),
      1,
    );
    expect(new Set(walked)).toEqual(new Set(ids));
  });

  it("filters the list by type, container (with sub-containers), fingerprint and metadata JSON", async () => {
    const [ssn, card, tagged, deep] = await createTokens([
      {
        type: "social_security_number",
        data: "234-56-7890",
        containers: ["/filters/"],
        metadata: { team: "Blue" },
      },
      { type: "card_number", data: "4242424242424242", containers: ["/filters/"], metadata: { team: "red" } },
      { type: "token", data: "x", containers: ["/filters/"], metadata: { team: "blue", tier: "gold" } },
      { type: "token", data: "y", containers: ["/filters/sub/"] },
    ]);
    const idsOf = async (query: Record<string, string>) => {
      const response = await listPage({ container: "/filters/", size: "100", ...query });
      expect(response.status, response.text).toBe(200);
      return (response.body.data as { id: string }[]).map((token) => token.id).sort();
    };
    expect(await idsOf({})).toEqual([ssn, card, tagged, deep].sort());
    expect(await idsOf({ type: "token" })).toEqual([tagged, deep].sort());
    expect(await idsOf({ container: "/filters/sub/" })).toEqual([deep]);
    expect(await idsOf({ metadata: JSON.stringify({ team: "blue" }) })).toEqual([ssn, tagged].sort());
    expect(await idsOf({ metadata: JSON.stringify({ team: "blue", tier: "gold" }) })).toEqual([tagged]);
    const fingerprint = (await server.request("GET", `/tokens/${card}`, { key: backend })).body
      .fingerprint as string;
    expect(await idsOf({ fingerprint })).toEqual([card]);
  });

  it("answers 400 problems for filters that name nothing", async () => {
    for (const [query, field] of [
      [{ metadata: "not json" }, "metadata"],
      [{ metadata: "[1]" }, "metadata"],
      [{ metadata: JSON.stringify({ a: 1 }) }, "metadata"],
      [{ metadata: JSON.stringify({ "": "x" }) }, "metadata"],
      [{ container: "pci" }, "container"],
      [{ type: "nope" }, "type"],
      [{ size: "101" }, "size"],
      [{ size: "0" }, "size"],
    ] as const) {
      const response = await listPage(query);
      expectProblem(response, 400, { code: "validation-failed" });
      expect(Object.keys(response.body.errors)).toEqual([field]);
    }
  });

  it("shows only what the caller's rules reach, through its own rule, with full pages", async () => {
    await createTokens([
      ...Array.from({ length: 5 }, (_, i) => ({
        type: "token",
        data: `pci-${i}`,
        containers: ["/pci/vis/"],
      })),
      ...Array.from({ length: 5 }, (_, i) => ({
        type: "token",
        data: `pii-${i}`,
        containers: ["/pii/vis/"],
      })),
    ]);
    const listed = await walk((start) => listPage({ size: "2", ...(start && { start }) }, pciOnly), 2);
    const searched = await walk((start) => searchPage({ size: 2, start }, pciOnly), 2);
    expect(listed.ids).toEqual(await v1Ids("", pciOnly));
    expect(searched.ids).toEqual(listed.ids);
    const some = await listPage({ size: "100" }, pciOnly);
    for (const token of some.body.data as { containers: string[]; data?: unknown }[]) {
      expect(token.containers[0]).toMatch(/^\/pci\//);
      // The rule masks, and these tokens have no mask: no data at all.
      expect(token.data).toBeUndefined();
    }
  });

  it("searches with the whole v1 language, in the same order, and the same 400s", async () => {
    await createTokens(
      Array.from({ length: 7 }, (_, i) => ({
        type: "social_security_number",
        data: `345-67-${String(8000 + i)}`,
        containers: ["/search/"],
        metadata: { n: String(i % 3) },
      })),
    );
    for (const query of [
      'container:"/search/*" AND (metadata.n:0 OR metadata.n:2) AND NOT data:"345-67-8000"',
      'container:"/search/" type:social_security_number created_at:[2000-01-01 TO *]',
      'data:"345678003"',
    ]) {
      const { ids } = await walk((start) => searchPage({ query, size: 2, ...(start && { start }) }), 2);
      expect(ids).toEqual(await v1Ids(query));
    }
    const bad = await searchPage({ query: "nofield:x" });
    expectProblem(bad, 400, { code: "validation-failed" });
    expect(bad.body.errors.query[0]).toMatch(/unknown field 'nofield'.*at offset 0/);
    expectProblem(await searchPage({ size: 101 }), 400, { code: "validation-failed" });
    expectProblem(await searchPage({ page: 2 }), 400, { code: "validation-failed" });
  });

  it("takes an absent body as {} and null for query, start and size as their defaults", async () => {
    const reference = await searchPage({});
    expect(reference.status, reference.text).toBe(200);
    const bare = await server.request("POST", "/v2/tokens/search", { key: backend });
    expect(bare.status, bare.text).toBe(200);
    const nulls = await searchPage({ query: null, start: null, size: null });
    expect(nulls.status, nulls.text).toBe(200);
    for (const response of [bare, nulls]) {
      expect(response.body.data.map((t: { id: string }) => t.id)).toEqual(
        reference.body.data.map((t: { id: string }) => t.id),
      );
      expect(response.body.pagination.page_size).toBe(20);
    }
  });

  describe("cursors", () => {
    let listCursor: string;
    let searchCursor: string;
    const query = 'container:"/cursor/*"';

    beforeAll(async () => {
      await createTokens(
        Array.from({ length: 4 }, (_, i) => ({ type: "token", data: `c-${i}`, containers: ["/cursor/"] })),
      );
      listCursor = (await listPage({ container: "/cursor/", size: "1" })).body.pagination.next as string;
      searchCursor = (await searchPage({ query, size: 1 })).body.pagination.next as string;
      expect(typeof listCursor).toBe("string");
      expect(typeof searchCursor).toBe("string");
    });

    function expectRefused(response: TestResponse) {
      expectProblem(response, 400, { code: "validation-failed" });
      expect(Object.keys(response.body.errors)).toEqual(["start"]);
      expect(response.body.errors.start[0]).toMatch(/not a cursor this API returned for this query/);
    }

    it("are opaque: neither the token id nor its date can be read from one", async () => {
      const { body } = await listPage({ container: "/cursor/", size: "1" });
      const [first] = body.data as { id: string; created_at: string }[];
      const decoded = Buffer.from(listCursor, "base64url").toString("latin1");
      expect(decoded).not.toContain(first!.id);
      expect(decoded).not.toContain(first!.created_at.slice(0, 10));
    });

    it("refuse any altered cursor with a 400, whichever byte changed", async () => {
      const bytes = Buffer.from(listCursor, "base64url");
      for (const at of [0, 1, 13, 29, bytes.length - 1]) {
        const altered = Buffer.from(bytes);
        altered[at] = altered[at]! ^ 0x01;
        expectRefused(await listPage({ container: "/cursor/", start: altered.toString("base64url") }));
      }
      for (const start of ["x", "AAAA", listCursor.slice(0, -2), `${listCursor}AA`]) {
        expectRefused(await listPage({ container: "/cursor/", start }));
        expectRefused(await searchPage({ query, start }));
      }
    });

    it("refuse a cursor carried to another query, filter, endpoint, Application or tenant", async () => {
      expectRefused(await listPage({ container: "/cursor/", type: "token", start: listCursor }));
      expectRefused(await listPage({ start: listCursor }));
      expectRefused(await searchPage({ query: 'container:"/pci/*"', start: searchCursor }));
      expectRefused(await searchPage({ query, start: listCursor }));
      expectRefused(await listPage({ container: "/cursor/", start: searchCursor }));
      expectRefused(await listPage({ container: "/cursor/", start: listCursor }, twin));
      expectRefused(await searchPage({ query, start: searchCursor }, otherTenantKey));
      // And the same cursor, in its own walk, still works.
      const own = await listPage({ container: "/cursor/", size: "1", start: listCursor });
      expect(own.status, own.text).toBe(200);
      expect(own.body.data).toHaveLength(1);
    });
  });

  /**
   * The keyset property: tokens created and deleted between pages never make the walk return a token twice, and
   * never make it miss one that existed from the first page to the last.
   */
  it("never repeats a token, nor skips one that existed for the whole walk, while tokens come and go", async () => {
    let run = 0;
    const operation = fc.oneof(
      fc.record({ kind: fc.constant("create" as const), count: fc.integer({ min: 1, max: 3 }) }),
      fc.record({ kind: fc.constant("delete" as const), pick: fc.nat() }),
      fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 3 }) }),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: 14 }),
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(),
        fc.array(fc.array(operation, { maxLength: 3 }), { minLength: 12, maxLength: 12 }),
        async (initial, size, bySearch, between) => {
          run += 1;
          const container = `/prop/r${run}/`;
          const make = (count: number) =>
            createTokens(
              Array.from({ length: count }, (_, i) => ({
                type: "token",
                data: `p${i}`,
                containers: [container],
              })),
            );
          const alive = new Set(initial > 0 ? await make(initial) : []);
          const throughout = new Set(alive);
          const seen: string[] = [];
          let start: string | undefined;
          for (let page = 0; ; page += 1) {
            const response = bySearch
              ? await searchPage({ query: `container:"${container}*"`, size, ...(start && { start }) })
              : await listPage({ container, size: String(size), ...(start && { start }) });
            expect(response.status, response.text).toBe(200);
            seen.push(...(response.body.data as { id: string }[]).map((token) => token.id));
            start = response.body.pagination.next ?? undefined;
            if (start === undefined) break;
            // A walk that does not move forward would never end.
            expect(page).toBeLessThan(100);
            for (const op of between[page % between.length]!) {
              if (op.kind === "create") {
                for (const id of await make(op.count)) alive.add(id);
              } else if (op.kind === "delete" && alive.size > 0) {
                const id = [...alive][op.pick % alive.size]!;
                const deleted = await server.request("DELETE", `/tokens/${encodeURIComponent(id)}`, {
                  key: backend,
                });
                expect(deleted.status, deleted.text).toBe(204);
                alive.delete(id);
                throughout.delete(id);
              } else if (op.kind === "tick") {
                server.clock.advance(op.ms);
              }
            }
          }
          expect(new Set(seen).size).toBe(seen.length);
          for (const id of throughout) expect(seen).toContain(id);
        },
      ),
      { numRuns: 20 },
    );
  }, 240_000);
});
