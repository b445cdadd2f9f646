import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";

/**
 * POST /tokens/search over real HTTP on both stores, against a small corpus whose creation times, creators,
 * containers and metadata are chosen so that every field, operator and bound of the language changes the answer.
 */
describe.skipIf(STORE_UNAVAILABLE)("Token search", () => {
  let server: TestServer;
  const keys: Record<string, string> = {};
  const appIds: Record<string, string> = {};
  /** Corpus token name → token id, and back. */
  const ids: Record<string, string> = {};
  const names = new Map<string, string>();
  const fingerprints: Record<string, string> = {};

  const setClock = (iso: string) => server.clock.advance(Date.parse(iso) - server.clock.now().getTime());

  async function application(name: string, body: Record<string, unknown>) {
    const response = await server.request("POST", "/applications", { body: { name, ...body } });
    expect(response.status, response.text).toBe(201);
    keys[name] = response.body.key as string;
    appIds[name] = response.body.id as string;
  }

  async function token(name: string, createdAt: string, body: Record<string, unknown>, by = "searcher") {
    setClock(createdAt);
    const response = await server.request("POST", "/tokens", { key: keys[by]!, body });
    expect(response.status, response.text).toBe(201);
    ids[name] = response.body.id as string;
    names.set(response.body.id as string, name);
    fingerprints[name] = response.body.fingerprint as string;
  }

  const search = (body: unknown, key = keys.searcher!) =>
    server.request("POST", "/tokens/search", { key, body });

  /** The names of the tokens a query finds, in result order, after checking that the total agrees. */
  async function find(query: string, key = keys.searcher!): Promise<string[]> {
    const response = await search({ query, size: 100 }, key);
    expect(response.status, `${query}: ${response.text}`).toBe(200);
    const found = (response.body.data as { id: string }[]).map((t) => names.get(t.id) ?? t.id);
    expect(response.body.pagination.total_items, query).toBe(found.length);
    return found;
  }

  beforeAll(async () => {
    server = await startTestServer();
    const everywhere = (permissions: string[], transform = "reveal") => [
      { priority: 1, container: "/", transform, permissions },
    ];
    await application("searcher", {
      type: "private",
      rules: everywhere(["token:search", "token:create", "token:update", "token:read"]),
    });
    await application("creator", { type: "private", rules: everywhere(["token:create"]) });
    await application("updater", { type: "private", rules: everywhere(["token:update", "token:read"]) });
    await application("pciOnly", {
      type: "private",
      rules: [{ priority: 1, container: "/pci/", transform: "mask", permissions: ["token:search"] }],
    });
    await application("mixed", {
      type: "private",
      rules: [
        { priority: 1, container: "/pci/", transform: "redact", permissions: ["token:search"] },
        { priority: 2, container: "/", transform: "reveal", permissions: ["token:search"] },
      ],
    });
    await application("implicit", { type: "private", permissions: ["token:search"] });
    await application("reader", { type: "private", rules: everywhere(["token:read"]) });

    const indexed = ["{{ data }}"];
    await token("A", "2024-01-01T12:00:00.000Z", {
      type: "token",
      data: "Alice@Example.com",
      search_indexes: indexed,
      metadata: { region: "EU", tier: "gold" },
    });
    await token("B", "2024-01-02T00:00:00.000Z", {
      type: "social_security_number",
      data: "123-45-6789",
      metadata: { region: "us" },
    });
    await token("C", "2024-01-02T23:59:59.999Z", {
      type: "social_security_number",
      data: "987-65-4321",
      metadata: { region: "eu", customer: "c 1" },
    });
    await token("D", "2024-01-03T10:00:00.000Z", {
      type: "card_number",
      data: "4242424242424242",
      metadata: { region: "eu" },
    });
    await token(
      "E",
      "2024-01-04T00:00:00.000Z",
      { type: "card_number", data: "5555555555554444", containers: ["/pci/low/"] },
      "creator",
    );
    await token("F", "2024-01-05T08:30:00.000Z", { type: "employer_id_number", data: "12-3456789" });
    await token("G", "2024-01-31T23:00:00.000Z", {
      type: "token",
      data: "Bob Smith",
      search_indexes: ["{{ data }}", "{{ data | slice: 0, 3 }}"],
      containers: ["/pci/"],
      metadata: { tier: "Silver" },
    });
    await token("H", "2024-02-01T00:00:00.000Z", {
      type: "bank",
      data: { routing_number: "021000021", account_number: "123456789" },
    });
    await token(
      "I",
      "2024-02-15T12:00:00.000Z",
      { type: "token", data: "x-ray", containers: ["/pcix/", "/general/low/"] },
      "creator",
    );
    await token("J", "2024-03-01T00:00:00.000Z", {
      type: "card_number",
      data: "4242424242424242",
      containers: ["/pci/high/archive/"],
    });
    await token("K", "2024-03-02T00:00:00.000Z", {
      type: "token",
      data: "ephemeral",
      search_indexes: indexed,
      expires_at: "2030-01-01T00:00:00Z",
    });
    await token("L", "2024-03-02T12:00:00.000Z", {
      type: "token",
      data: "gone",
      search_indexes: indexed,
      expires_at: "2024-03-03T00:00:00Z",
    });
    setClock("2024-04-01T00:00:00.000Z");
    const patch = (name: string, key: string, body: unknown) =>
      server.request("PATCH", `/tokens/${ids[name]!}`, {
        key,
        rawBody: JSON.stringify(body),
        contentType: "application/merge-patch+json",
      });
    expect((await patch("B", keys.updater!, { metadata: { tier: "bronze" } })).status).toBe(200);
    setClock("2024-04-02T10:00:00.000Z");
    expect((await patch("G", keys.searcher!, { metadata: { note: "x" } })).status).toBe(200);
    setClock("2024-05-01T00:00:00.000Z");
  });
  afterAll(() => server?.close());

  const ALL = ["K", "J", "I", "H", "G", "F", "E", "D", "C", "B", "A"];

  /** [query, the tokens it finds in result order]; `$X` stands for token X's id, `#X` for its fingerprint, `~name` for an Application's id. */
  const CASES: [string, string[]][] = [
    ["", ALL],
    ["   ", ALL],
    ["type:token", ["K", "I", "G", "A"]],
    ["type:social_security_number", ["C", "B"]],
    ["type:card_number", ["J", "E", "D"]],
    ["type:bank", ["H"]],
    ["type:employer_id_number", ["F"]],
    ["type:card", []],
    ["id:$A", ["A"]],
    ['id:"$A"', ["A"]],
    ["id:nonexistent", []],
    ["id:$A OR id:$B OR id:$K", ["K", "B", "A"]],
    ["fingerprint:#D", ["J", "D"]],
    ["fingerprint:nope", []],
    ["created_by:~creator", ["I", "E"]],
    ["created_by:~searcher", ["K", "J", "H", "G", "F", "D", "C", "B", "A"]],
    ["modified_by:~updater", ["B"]],
    ["modified_by:~searcher", ["G"]],
    ["NOT modified_by:~updater", ["K", "J", "I", "H", "G", "F", "E", "D", "C", "A"]],
    ["data:alice@example.com", ["A"]],
    ["data:ALICE@EXAMPLE.COM", ["A"]],
    ['data:"Alice@Example.com"', ["A"]],
    ["data:123-45-6789", ["B"]],
    ["data:123456789", ["F", "B"]],
    ["data:6789", ["F", "B"]],
    ["data:4321", ["C"]],
    ["data:bob", ["G"]],
    ['data:"bob smith"', ["G"]],
    ["data:4242424242424242", []],
    ["data:x-ray", []],
    ["data:ephemeral", ["K"]],
    ["data:gone", []],
    ["data:nothing", []],
    ["metadata.region:eu", ["D", "C", "A"]],
    ["metadata.region:EU", ["D", "C", "A"]],
    ["metadata.region:us", ["B"]],
    ["metadata.Region:eu", []],
    ['metadata.customer:"c 1"', ["C"]],
    ['metadata.customer:"C 1"', ["C"]],
    ["metadata.customer:c", []],
    ["metadata.tier:silver", ["G"]],
    ["metadata.tier:bronze", ["B"]],
    ["metadata.note:X", ["G"]],
    ["metadata.missing:x", []],
    ['container:"/pci/high/"', ["D"]],
    ["container:/pci/high/", ["D"]],
    ['container:"/pci/*"', ["J", "G", "E", "D"]],
    ['container:"/pci/high/*"', ["J", "D"]],
    ['container:"/pci/"', ["G"]],
    ['container:"/PCI/"', ["G"]],
    ['container:"/pcix/"', ["I"]],
    ['container:"/general/*"', ["K", "I", "A"]],
    ['container:"/general/low/"', ["I"]],
    ['container:"/*"', ALL],
    ['container:"/nothing/"', []],
    ['container:"/bank/*"', ["H"]],
    ["created_at:2024-01-02", ["C", "B"]],
    ["created_at:[2024-01-02 TO 2024-01-02]", ["C", "B"]],
    ["created_at:{2024-01-01 TO 2024-01-03}", ["C", "B"]],
    ["created_at:[2024-01-01 TO 2024-01-03}", ["C", "B", "A"]],
    ["created_at:{2024-01-02 TO *]", ["K", "J", "I", "H", "G", "F", "E", "D"]],
    ["created_at:[* TO 2024-01-01]", ["A"]],
    ["created_at:[* TO 2024-01-01T12:00:00Z}", []],
    ["created_at:[* TO 2024-01-01T12:00:00Z]", ["A"]],
    ["created_at:[2024-01-02T00:00:00Z TO 2024-01-02T23:59:59.999Z]", ["C", "B"]],
    ["created_at:[2024-01-02T00:00:00Z TO 2024-01-02T23:59:59.999Z}", ["B"]],
    ["created_at:{2024-01-02T00:00:00Z TO 2024-01-03T10:00:00Z]", ["D", "C"]],
    ["created_at:[2024-01-02T23:59:59.9985Z TO 2024-01-02T23:59:59.9995Z]", ["C"]],
    ["created_at:2024-01-03T10:00:00Z", ["D"]],
    ["created_at:2024-01-03T10:00:00.000Z", ["D"]],
    ["created_at:2024-01-01T12:00", ["A"]],
    ["created_at:[2024-01-01T12:00:00+00:00 TO 2024-01-01T12:00:00+00:00]", ["A"]],
    ["created_at:[2024-02-01 TO *]", ["K", "J", "I", "H"]],
    ["created_at:[* TO *]", ALL],
    ["created_at:[2024-02-01 TO 2024-01-01]", []],
    ["modified_at:[* TO *]", ["G", "B"]],
    ["modified_at:2024-04-01", ["B"]],
    ["modified_at:[2024-04-02T10:00:00Z TO 2024-04-02T10:00:00Z]", ["G"]],
    ["NOT modified_at:[* TO *]", ["K", "J", "I", "H", "F", "E", "D", "C", "A"]],
    ["type:social_security_number AND metadata.region:eu", ["C"]],
    ["type:social_security_number metadata.region:eu", ["C"]],
    ["type:social_security_number OR type:employer_id_number", ["F", "C", "B"]],
    ['type:token AND NOT container:"/general/*"', ["G"]],
    ['type:token -container:"/general/*"', ["G"]],
    ['type:token !container:"/general/*"', ["G"]],
    ["NOT type:token", ["J", "H", "F", "E", "D", "C", "B"]],
    ["-type:token", ["J", "H", "F", "E", "D", "C", "B"]],
    ["! type:token", ["J", "H", "F", "E", "D", "C", "B"]],
    ["NOT NOT type:bank", ["H"]],
    ["(type:card_number OR type:bank) AND created_at:[2024-01-04 TO *]", ["J", "H", "E"]],
    ["type:card_number OR type:bank AND created_at:[2024-01-04 TO *]", ["J", "H", "E", "D"]],
    ["type:bank AND created_at:[2024-01-04 TO *] OR type:card_number", ["J", "H", "E", "D"]],
    ["NOT type:token AND NOT type:card_number", ["H", "F", "C", "B"]],
    ["NOT (type:token OR type:card_number)", ["H", "F", "C", "B"]],
    ["(data:6789 OR data:4321) AND NOT type:employer_id_number", ["C", "B"]],
    ['metadata.region:eu AND container:"/pci/*"', ["D"]],
    ['metadata.region:eu OR container:"/pcix/"', ["I", "D", "C", "A"]],
    ["data:123456789 AND type:social_security_number", ["B"]],
    ['fingerprint:#D AND container:"/pci/high/"', ["D"]],
    ["((type:bank))", ["H"]],
    ["type:token AND (metadata.tier:gold OR metadata.tier:silver)", ["G", "A"]],
    ["created_by:~creator AND NOT type:token", ["E"]],
    ["type:card_number AND created_at:[2024-03-01 TO 2024-03-01]", ["J"]],
    ["  type:bank  ", ["H"]],
    ["type:bank\tOR\ntype:employer_id_number", ["H", "F"]],
    ['container:"/*" AND type:bank', ["H"]],
    ['NOT container:"/*"', []],
    ["metadata.region:eu AND metadata.tier:gold", ["A"]],
    ["type:token AND created_at:{2024-01-31T23:00:00Z TO *}", ["K", "I"]],
    ["data:ALICE@example.com OR data:bob", ["G", "A"]],
    ["data:6789 AND data:123-45-6789", ["B"]],
    ["metadata.region:eu AND NOT type:card_number AND created_at:[2024-01-02 TO *]", ["C"]],
    ['container:"/pci/*" AND NOT container:"/pci/high/*"', ["G", "E"]],
    ['(container:"/pci/*" OR container:"/bank/*") AND created_by:~searcher', ["J", "H", "G", "D"]],
  ];

  const substitute = (query: string) =>
    query
      .replace(/\$([A-L])/g, (_, name: string) => ids[name]!)
      .replace(/#([A-L])/g, (_, name: string) => fingerprints[name]!)
      .replace(/~(\w+)/g, (_, name: string) => appIds[name]!);

  it("has a case table of at least 80 queries", () => {
    expect(CASES.length).toBeGreaterThanOrEqual(80);
  });

  it.each(CASES)("%s", async (query, expected) => {
    expect(await find(substitute(query))).toEqual(expected);
  });

  describe("paging", () => {
    it("pages through every result once, in order, with the same total", async () => {
      const seen: string[] = [];
      for (let page = 1; page <= 6; page += 1) {
        const response = await search({ size: 2, page });
        expect(response.status).toBe(200);
        expect(response.body.pagination).toEqual({
          total_items: 11,
          page_number: page,
          page_size: 2,
          total_pages: 6,
        });
        seen.push(...(response.body.data as { id: string }[]).map((t) => names.get(t.id)!));
      }
      expect(seen).toEqual(ALL);
    });

    it("answers a page past the end with no tokens and the real total", async () => {
      const response = await search({ query: "type:token", page: 3, size: 2 });
      expect(response.status).toBe(200);
      expect(response.body).toEqual({
        pagination: { total_items: 4, page_number: 3, page_size: 2, total_pages: 2 },
        data: [],
      });
    });

    it("keeps totals exact across writes and expiry when they come from a count", async () => {
      const total = async () => {
        const response = await search({ query: "type:token", size: 1 });
        expect(response.status).toBe(200);
        expect(response.body.data).toHaveLength(1);
        return response.body.pagination.total_items as number;
      };
      const before = await total();
      expect(await total()).toBe(before);
      const now = server.clock.now().getTime();
      const created = await server.request("POST", "/tokens", {
        key: keys.searcher!,
        body: { type: "token", data: "short-lived", expires_at: new Date(now + 3_600_000).toISOString() },
      });
      expect(created.status).toBe(201);
      names.set(created.body.id as string, "short-lived");
      expect(await total()).toBe(before + 1);
      // Nothing is written when a token expires; the total must drop all the same.
      server.clock.advance(2 * 3_600_000);
      expect(await total()).toBe(before);
    });

    it("defaults to page 1 of 20 and accepts a null query", async () => {
      const response = await search({ query: null });
      expect(response.status).toBe(200);
      expect(response.body.pagination).toEqual({
        total_items: 11,
        page_number: 1,
        page_size: 20,
        total_pages: 1,
      });
    });

    it.each([
      [{ size: 101 }, "size"],
      [{ size: 0 }, "size"],
      [{ page: 0 }, "page"],
      [{ page: "1" }, "page"],
      [{ query: 5 }, "query"],
      [{ query: "type:bank", sort: "id" }, "sort"],
    ])("refuses %j naming %s", async (body, field) => {
      const response = await search(body);
      expectProblem(response, 400, { code: "validation-failed" });
      expect(Object.keys(response.body.errors as object)).toEqual([field]);
    });
  });

  describe("visibility and transforms", () => {
    it("counts and returns only tokens under the caller's search rules, shown through them", async () => {
      const response = await search({ query: "", size: 100 }, keys.pciOnly);
      expect(response.status).toBe(200);
      const tokens = response.body.data as { id: string; data?: unknown }[];
      expect(tokens.map((t) => names.get(t.id))).toEqual(["J", "G", "E", "D"]);
      expect(response.body.pagination.total_items).toBe(4);
      const card = tokens.find((t) => names.get(t.id) === "D")!;
      expect(card.data).not.toBe("4242424242424242");
      expect(String(card.data)).toContain("4242");
      // A token without a mask shows no data under the mask transform.
      expect(tokens.find((t) => names.get(t.id) === "G")).not.toHaveProperty("data");
    });

    it("applies the first rule that covers each token", async () => {
      const response = await search({ query: "type:card_number OR type:token", size: 100 }, keys.mixed);
      const tokens = response.body.data as { id: string; data?: unknown }[];
      const byName = new Map(tokens.map((t) => [names.get(t.id)!, t]));
      expect([...byName.keys()]).toEqual(["K", "J", "I", "G", "E", "D", "A"]);
      for (const name of ["J", "G", "E", "D"]) expect(byName.get(name)).not.toHaveProperty("data");
      expect(byName.get("I")!.data).toBe("x-ray");
      expect(byName.get("A")!.data).toBe("Alice@Example.com");
    });

    it("gives top-level token:search an implicit masked rule over every container", async () => {
      const response = await search({ query: "type:social_security_number", size: 100 }, keys.implicit);
      const tokens = response.body.data as { data?: unknown }[];
      expect(tokens).toHaveLength(2);
      expect(tokens.map((t) => t.data)).toEqual([
        expect.stringMatching(/4321$/),
        expect.stringMatching(/6789$/),
      ]);
      expect(tokens.map((t) => t.data)).not.toContain("987-65-4321");
    });

    it("refuses a key without token:search with 403 naming the permission", async () => {
      expectProblem(await search({ query: "" }, keys.reader), 403, { detail: /token:search/ });
    });

    it("refuses a missing key with 401", async () => {
      const response = await server.request("POST", "/tokens/search", { key: null, body: {} });
      expectProblem(response, 401);
    });

    it("never shows another tenant's tokens", async () => {
      const tenant = await server.request("POST", "/tenants", { body: { name: "other" } });
      expect(tenant.status, tenant.text).toBe(201);
      const otherKey = tenant.body.application.key as string;
      const other = await server.request("POST", "/applications", {
        key: otherKey,
        body: {
          name: "other searcher",
          type: "private",
          rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:search"] }],
        },
      });
      expect(other.status, other.text).toBe(201);
      for (const query of ["", "data:6789", "metadata.region:eu", 'container:"/pci/*"', `id:${ids.A!}`]) {
        const response = await search({ query }, other.body.key as string);
        expect(response.status).toBe(200);
        expect(response.body.pagination.total_items, query).toBe(0);
      }
    });

    it("finds a token as soon as its create returns, and loses it when it is deleted", async () => {
      const created = await server.request("POST", "/tokens", {
        key: keys.searcher!,
        body: { type: "token", data: "fresh value", search_indexes: ["{{ data }}"] },
      });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      names.set(id, "fresh");
      expect(await find('data:"FRESH VALUE"')).toEqual(["fresh"]);
      const deleted = await server.request("DELETE", `/tokens/${id}`, {
        key: (
          await server.request("POST", "/applications", {
            body: {
              name: "deleter",
              type: "private",
              rules: [{ priority: 1, container: "/", transform: "redact", permissions: ["token:delete"] }],
            },
          })
        ).body.key as string,
      });
      expect(deleted.status).toBe(204);
      expect(await find('data:"fresh value"')).toEqual([]);
    });

    it("follows an update: new index values are found, old ones are not", async () => {
      const created = await server.request("POST", "/tokens", {
        key: keys.searcher!,
        body: { type: "token", data: "before", search_indexes: ["{{ data }}"], metadata: { stage: "one" } },
      });
      const id = created.body.id as string;
      names.set(id, "moving");
      const patched = await server.request("PATCH", `/tokens/${id}`, {
        key: keys.searcher!,
        rawBody: JSON.stringify({ data: "after", metadata: { stage: "two" }, containers: ["/moved/"] }),
        contentType: "application/merge-patch+json",
      });
      expect(patched.status, patched.text).toBe(200);
      expect(await find("data:before")).toEqual([]);
      expect(await find("data:after")).toEqual(["moving"]);
      expect(await find("metadata.stage:one")).toEqual([]);
      expect(await find('metadata.stage:two AND container:"/moved/"')).toEqual(["moving"]);
    });
  });

  describe("invalid queries", () => {
    const long = "id:" + "x".repeat(4094);
    const terms = Array.from({ length: 65 }, (_, i) => `id:t${i}`).join(" OR ");
    const nested = "(".repeat(17) + "type:token" + ")".repeat(17);
    const TYPES =
      "token, card, bank, card_number, social_security_number, employer_id_number, us_bank_account_number, us_bank_routing_number";
    const ERRORS: [string, string][] = [
      ["foo:bar", "unknown field 'foo' (at offset 0)"],
      ["type:token AND foo:bar", "unknown field 'foo' (at offset 15)"],
      ["AND:x", "unknown field 'AND' (at offset 0)"],
      [
        "created_at:2024-02-30",
        "'2024-02-30' is not an ISO 8601 date (2024-01-31) or UTC date-time (2024-01-31T23:59:59Z) (at offset 11)",
      ],
      [
        "created_at:[2024-01-01 TO 2024-13-01]",
        "'2024-13-01' is not an ISO 8601 date (2024-01-31) or UTC date-time (2024-01-31T23:59:59Z) (at offset 26)",
      ],
      [
        "created_at:2024-01-01T10:00:00+02:00",
        "'2024-01-01T10:00:00+02:00' is not an ISO 8601 date (2024-01-31) or UTC date-time (2024-01-31T23:59:59Z) (at offset 11)",
      ],
      ["(type:token", "unbalanced parenthesis: '(' is never closed (at offset 0)"],
      ["type:token)", "unbalanced parenthesis: ')' closes nothing (at offset 10)"],
      ["(type:token))", "unbalanced parenthesis: ')' closes nothing (at offset 12)"],
      ["()", "empty parentheses (at offset 0)"],
      ["type:token AND", "AND has no term after it (at offset 11)"],
      ["type:token OR", "OR has no term after it (at offset 11)"],
      ["OR type:token", "OR has no term before it (at offset 0)"],
      ["type:token AND AND type:bank", "AND has no term after it (at offset 11)"],
      ["type:token AND OR type:bank", "AND has no term after it (at offset 11)"],
      ["NOT", "NOT has no term after it (at offset 0)"],
      ["type:bank -", "- has no term after it (at offset 10)"],
      ["(NOT)", "NOT has no term after it (at offset 1)"],
      [
        "container:/pci/*",
        'wildcards are only allowed at the end of a quoted container, as in container:"/pci/*" (at offset 15)',
      ],
      [
        'container:"/p*ci/"',
        'wildcards are only allowed at the end of a quoted container, as in container:"/pci/*" (at offset 13)',
      ],
      [
        "data:abc*",
        'wildcards are only allowed at the end of a quoted container, as in container:"/pci/*"; quote the value to search for a literal *, as in data:"12*34" (at offset 8)',
      ],
      [
        "id:*",
        'wildcards are only allowed at the end of a quoted container, as in container:"/pci/*"; quote the value to search for a literal *, as in data:"12*34" (at offset 3)',
      ],
      [
        'container:"/pci"',
        "'/pci' is not a container like /pci/high/, or a subtree like \"/pci/*\" (at offset 10)",
      ],
      ['container:"/pci/../pii/"', "'/pci/../pii/' must not have . or .. as a segment (at offset 10)"],
      ['container:"/pci/./*"', "'/pci/./*' must not have . or .. as a segment (at offset 10)"],
      ["container:/../", "'/../' must not have . or .. as a segment (at offset 10)"],
      ["type:", "type has an empty value (at offset 5)"],
      ['type:""', "type has an empty value (at offset 5)"],
      ["type: token", "type has an empty value (at offset 5)"],
      ['type:"token"x', "expected a space or ')' after the value of type (at offset 12)"],
      ['type:"token', "unterminated quoted value (at offset 5)"],
      ["created_at:[2024-01-01 TO", "range is never closed with ']' or '}' (at offset 0)"],
      ["created_at:[2024-01-01 TO 2024-02-01", "range is never closed with ']' or '}' (at offset 0)"],
      ["created_at:[2024-01-01 2024-02-01]", "expected TO in the range of created_at (at offset 23)"],
      ["created_at:[ TO 2024-02-01]", "expected TO in the range of created_at (at offset 16)"],
      ["id:[a TO b]", "ranges are only allowed on created_at and modified_at, not on id (at offset 0)"],
      [
        "type:unknown",
        "unknown token type 'unknown'; one of token, card, bank, card_number, social_security_number, employer_id_number, us_bank_account_number, us_bank_routing_number (at offset 5)",
      ],
      ["metadata.:x", "metadata needs a key, as in metadata.region:eu (at offset 0)"],
      ['type"token"', "expected field:value, found a word without a ':' (at offset 0)"],
      ['"quoted"', "expected a term like type:token, found '\"' (at offset 0)"],
      ["alice", "expected field:value, found a word without a ':' (at offset 0)"],
      ["4111111111111111", "expected field:value, found a word without a ':' (at offset 0)"],
      ["type:4111111111111111", `unknown token type; one of ${TYPES} (at offset 5)`],
      ["4111111111111111:x", "unknown field (at offset 0)"],
      ["type:bank\u0000", "holds a control character or a lone surrogate (at offset 9)"],
      ["data:\ud800x", "holds a control character or a lone surrogate (at offset 5)"],
      [long, "is longer than 4096 bytes (at offset 4096)"],
      [terms, `has more than 64 terms (at offset ${terms.indexOf("id:t64")})`],
      [nested, "nests parentheses deeper than 16 levels (at offset 16)"],
    ];

    it.each(ERRORS)("%j", async (query, message) => {
      const response = await search({ query });
      expectProblem(response, 400, { code: "validation-failed", errors: { query: [message] } });
    });
  });

  // Last: these tokens are outside the corpus the tables above are written for.
  it("reads * inside a quoted value of any field but container as the character itself", async () => {
    const star = (name: string, body: Record<string, unknown>) =>
      token(name, "2026-06-01T00:00:00Z", { containers: ["/star/"], ...body });
    await star("S1", { id: "order*42", type: "token", data: "12*34", search_indexes: ["{{ data }}"] });
    await star("S2", {
      type: "token",
      data: "1234",
      search_indexes: ["{{ data }}"],
      metadata: { note: "a*b" },
    });
    await star("S3", {
      type: "token",
      data: "12x34",
      search_indexes: ["{{ data }}"],
      metadata: { note: "ab" },
    });
    const inStar = (query: string) => find(`container:"/star/*" AND ${query}`);
    expect(await inStar('data:"12*34"')).toEqual(["S1"]);
    expect(await inStar('data:"12\\*34"')).toEqual(["S1"]);
    expect(await inStar('id:"order*42"')).toEqual(["S1"]);
    expect(await inStar('metadata.note:"a*b"')).toEqual(["S2"]);
    // Not a wildcard: "a*" finds no "ab", nor "12*" any value starting with 12.
    expect(await inStar('metadata.note:"a*"')).toEqual([]);
    expect(await inStar('data:"12*"')).toEqual([]);
    // The v2 search reads the same language the same way.
    const v2 = await server.request("POST", "/v2/tokens/search", {
      key: keys.searcher!,
      body: { query: 'metadata.note:"a*b"' },
    });
    expect(v2.status, v2.text).toBe(200);
    expect(v2.body.data.map((t: { id: string }) => names.get(t.id))).toEqual(["S2"]);
  });
});
