import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../test/harness.js";
import type { Condition } from "../access/rules.js";

/**
 * Differential test: random corpora and random queries, answered by the server (parser, compiler, SQL on the
 * store under test) and by the small reference evaluator below, which shares no code with the server — it reads
 * its own query trees, not the server's parse. Both must give the same tokens in the same order.
 */

const DAY = 86_400_000;
const BASE = Date.parse("2024-03-10T00:00:00.000Z");
const QUERY_TIME = BASE + 30 * DAY;

type TokenKind = "token" | "social_security_number" | "employer_id_number" | "card_number";
const DATA: Record<TokenKind, string[]> = {
  token: ["alpha", "Alpha", "beta", "ALPHA beta", "Ünïcode"],
  social_security_number: ["123-45-6789", "987-65-6789", "111-22-3333"],
  employer_id_number: ["12-3456789", "98-7654321"],
  card_number: ["4242424242424242", "5555555555554444"],
};
// The root itself too: a token there lies under no top-level path, which rule coverage must notice.
const CONTAINERS = ["/a/", "/a/b/", "/a/b/c/", "/ab/", "/d/", "/"];
const REGIONS = ["eu", "EU", "us", "Eu west"];
const TIERS = ["gold", "silver"];

interface ModelToken {
  kind: TokenKind;
  data: string;
  indexed: boolean;
  metadata: Record<string, string>;
  containers: string[];
  createdAt: number;
  expiresAt?: number;
  /** Patched after creation: new metadata, and who and when. */
  patch?: { at: number; region: string; byUpdater: boolean };
}

interface Stored extends ModelToken {
  id: string;
  createdBy: "searcher" | "creator";
  modifiedAt?: number;
  modifiedBy?: "searcher" | "updater";
}

const tokenArb: fc.Arbitrary<ModelToken> = fc
  .record({
    kind: fc.constantFrom<TokenKind>("token", "social_security_number", "employer_id_number", "card_number"),
    pick: fc.nat(),
    indexed: fc.boolean(),
    region: fc.option(fc.constantFrom(...REGIONS), { nil: undefined }),
    tier: fc.option(fc.constantFrom(...TIERS), { nil: undefined }),
    containers: fc.uniqueArray(fc.constantFrom(...CONTAINERS), { minLength: 1, maxLength: 2 }),
    // Few distinct instants, so that ties on created_at (ordered by id then) and day boundaries are common.
    createdAt: fc.constantFrom(0, 0, DAY - 1, DAY, DAY + 1, 2 * DAY + 12 * 3_600_000, 5 * DAY),
    expires: fc.constantFrom(undefined, undefined, undefined, 20 * DAY, 40 * DAY),
    patch: fc.option(
      fc.record({
        day: fc.constantFrom(10, 11),
        region: fc.constantFrom(...REGIONS),
        byUpdater: fc.boolean(),
      }),
      { nil: undefined },
    ),
  })
  .map((r) => {
    const values = DATA[r.kind];
    return {
      kind: r.kind,
      data: values[r.pick % values.length]!,
      indexed: r.kind === "token" ? r.indexed : r.kind !== "card_number",
      metadata: {
        ...(r.region !== undefined && { region: r.region }),
        ...(r.tier !== undefined && { tier: r.tier }),
      },
      containers: r.containers,
      createdAt: BASE + r.createdAt,
      ...(r.expires !== undefined && { expiresAt: BASE + r.expires }),
      ...(r.patch !== undefined && {
        patch: { at: BASE + r.patch.day * DAY, region: r.patch.region, byUpdater: r.patch.byUpdater },
      }),
    };
  });

// ---- queries: the test's own trees, rendered to text with varied spelling ----

type Query =
  | { op: "and" | "or"; children: Query[]; implicit: boolean }
  | { op: "not"; child: Query; spelling: "NOT " | "!" | "-" }
  | { op: "term"; field: string; value: string; quoted: boolean }
  | { op: "range"; field: "created_at" | "modified_at"; lower?: RangeBound; upper?: RangeBound };

interface RangeBound {
  text: string;
  inclusive: boolean;
}

const dateText = fc
  .constantFrom(0, 1, 2, 5, 10, 11)
  .map((d) => new Date(BASE + d * DAY).toISOString().slice(0, 10));
const instantText = fc
  .constantFrom(0, DAY - 1, DAY, DAY + 1, 2 * DAY + 12 * 3_600_000, 10 * DAY)
  .map((ms) => new Date(BASE + ms).toISOString());
const boundArb = fc.option(fc.record({ text: fc.oneof(dateText, instantText), inclusive: fc.boolean() }), {
  nil: undefined,
});

function termArb(ids: string[], appIds: Record<string, string>): fc.Arbitrary<Query> {
  const term = (field: string, value: fc.Arbitrary<string>, quoted: fc.Arbitrary<boolean> = fc.boolean()) =>
    fc.record({ op: fc.constant("term" as const), field: fc.constant(field), value, quoted });
  const allValues = Object.values(DATA).flat();
  const indexedValues = [...allValues, "6789", "3333", "123456789", "987656789", "4321"];
  return fc.oneof(
    term(
      "type",
      fc.constantFrom<string>("token", "social_security_number", "employer_id_number", "card_number", "bank"),
    ),
    term(
      "data",
      fc.constantFrom(...indexedValues).chain((v) => fc.constantFrom(v, v.toUpperCase(), v.toLowerCase())),
      fc.constant(true),
    ),
    term("metadata.region", fc.constantFrom(...REGIONS, "EU WEST", "asia"), fc.constant(true)),
    term("metadata.tier", fc.constantFrom(...TIERS, "GOLD")),
    term(
      "container",
      fc.oneof(
        fc.constantFrom(...CONTAINERS, "/A/B/", "/x/"),
        fc.constantFrom("/a/*", "/a/b/*", "/ab/*", "/*", "/d/*"),
      ),
      fc.constant(true),
    ),
    term("id", ids.length > 0 ? fc.constantFrom(...ids, "missing") : fc.constant("missing")),
    term("created_by", fc.constantFrom(appIds.searcher!, appIds.creator!)),
    term("modified_by", fc.constantFrom(appIds.searcher!, appIds.updater!)),
    term("created_at", fc.oneof(dateText, instantText), fc.constant(false)),
    fc.record({
      op: fc.constant("range" as const),
      field: fc.constantFrom<"created_at" | "modified_at">("created_at", "modified_at"),
      lower: boundArb,
      upper: boundArb,
    }),
  );
}

function queryArb(ids: string[], appIds: Record<string, string>): fc.Arbitrary<Query> {
  const { tree } = fc.letrec<{ tree: Query }>((tie) => ({
    tree: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      termArb(ids, appIds),
      fc.record({
        op: fc.constantFrom<"and" | "or">("and", "or"),
        children: fc.array(tie("tree"), { minLength: 2, maxLength: 3 }),
        implicit: fc.boolean(),
      }),
      fc.record({
        op: fc.constant("not" as const),
        child: tie("tree"),
        spelling: fc.constantFrom<"NOT " | "!" | "-">("NOT ", "!", "-"),
      }),
    ),
  }));
  return tree;
}

function render(q: Query): string {
  switch (q.op) {
    case "term": {
      const value = q.quoted ? `"${q.value.replace(/(["\\])/g, "\\$1")}"` : q.value;
      return `${q.field}:${value}`;
    }
    case "range": {
      const lower = q.lower === undefined ? "[*" : `${q.lower.inclusive ? "[" : "{"}${q.lower.text}`;
      const upper = q.upper === undefined ? "*]" : `${q.upper.text}${q.upper.inclusive ? "]" : "}"}`;
      return `${q.field}:${lower} TO ${upper}`;
    }
    case "not":
      return `${q.spelling}(${render(q.child)})`;
    case "and":
    case "or":
      return q.children
        .map((c) => `(${render(c)})`)
        .join(q.op === "or" ? " OR " : q.implicit ? " " : " AND ");
  }
}

// ---- the reference evaluator ----

const fold = (s: string) => s.normalize("NFKC").toLowerCase();
const startOfDay = (text: string) => Date.parse(`${text}T00:00:00.000Z`);
const isDate = (text: string) => text.length === 10;

function indexValues(t: Stored): string[] {
  if (!t.indexed) return [];
  if (t.kind === "token") return [t.data];
  return [t.data, t.data.replaceAll("-", ""), t.data.slice(-4)];
}

function inRange(ms: number | undefined, lower?: RangeBound, upper?: RangeBound): boolean {
  if (ms === undefined) return false;
  if (lower !== undefined) {
    const from = isDate(lower.text)
      ? startOfDay(lower.text) + (lower.inclusive ? 0 : DAY)
      : Date.parse(lower.text) + (lower.inclusive ? 0 : 1);
    if (ms < from) return false;
  }
  if (upper !== undefined) {
    const to = isDate(upper.text)
      ? startOfDay(upper.text) + (upper.inclusive ? DAY : 0)
      : Date.parse(upper.text) + (upper.inclusive ? 1 : 0);
    if (ms >= to) return false;
  }
  return true;
}

function matches(q: Query, t: Stored, appIds: Record<string, string>): boolean {
  switch (q.op) {
    case "and":
      return q.children.every((c) => matches(c, t, appIds));
    case "or":
      return q.children.some((c) => matches(c, t, appIds));
    case "not":
      return !matches(q.child, t, appIds);
    case "range":
      return inRange(q.field === "created_at" ? t.createdAt : t.modifiedAt, q.lower, q.upper);
    case "term": {
      const v = q.value;
      if (q.field.startsWith("metadata.")) {
        const stored = t.metadata[q.field.slice("metadata.".length)];
        return stored !== undefined && fold(stored) === fold(v);
      }
      switch (q.field) {
        case "type":
          return t.kind === v;
        case "data":
          return indexValues(t).some((x) => fold(x) === fold(v));
        case "container":
          return v.endsWith("*")
            ? t.containers.some((c) => c.startsWith(v.slice(0, -1).toLowerCase()))
            : t.containers.includes(v.toLowerCase());
        case "id":
          return t.id === v;
        case "created_by":
          return appIds[t.createdBy] === v;
        case "modified_by":
          return t.modifiedBy !== undefined && appIds[t.modifiedBy] === v;
        case "created_at":
          return isDate(v)
            ? t.createdAt >= startOfDay(v) && t.createdAt < startOfDay(v) + DAY
            : t.createdAt === Date.parse(v);
        default:
          throw new Error(`reference evaluator has no field ${q.field}`);
      }
    }
  }
}

function expected(q: Query | undefined, corpus: Stored[], appIds: Record<string, string>, rules: string[]) {
  return corpus
    .filter((t) => t.expiresAt === undefined || t.expiresAt > QUERY_TIME)
    .filter((t) => t.containers.some((c) => rules.some((rule) => c.startsWith(rule))))
    .filter((t) => q === undefined || matches(q, t, appIds))
    .sort((a, b) => b.createdAt - a.createdAt || Buffer.compare(Buffer.from(b.id), Buffer.from(a.id)))
    .map((t) => t.id);
}

/** A session's condition rules as spec §2.4 reads them: some rule with every one of its conditions holding. */
function expectedForSession(
  q: Query | undefined,
  corpus: Stored[],
  appIds: Record<string, string>,
  alternatives: Condition[][],
) {
  const holds = (c: Condition, t: Stored) => {
    if (c.attribute === "id") return c.operator === "equals" ? t.id === c.value : t.id.startsWith(c.value);
    const value = c.value.toLowerCase();
    return c.operator === "equals"
      ? t.containers.includes(value)
      : t.containers.some((x) => x.startsWith(value));
  };
  const reached = new Set(
    corpus.filter((t) => alternatives.some((all) => all.every((c) => holds(c, t)))).map((t) => t.id),
  );
  return expected(q, corpus, appIds, ["/"]).filter((id) => reached.has(id));
}

// ---- the test ----

/**
 * Searching Applications with rules on part of the tree, on every top-level path (so that no per-token rule check
 * is needed), and below the top level (so that it is).
 */
const SEARCHERS: Record<string, string[]> = {
  narrow: ["/a/"],
  covering: ["/a/", "/ab/", "/d/"],
  deep: ["/a/b/", "/ab/", "/d/"],
};

/**
 * Session keys authorized by `searcher` (which searches every container) with condition rules: their reach is
 * the conditions, as SQL (access/decide.ts reachOf through search/predicate.ts conditionsPredicate).
 */
const SESSION_SEARCHERS: Record<string, (ids: string[]) => Condition[][]> = {
  "session by containers": () => [
    [{ attribute: "container", operator: "starts_with", value: "/A/" }],
    [{ attribute: "container", operator: "equals", value: "/ab/" }],
  ],
  "session by ids and containers": (ids) => [
    [
      { attribute: "id", operator: "starts_with", value: ids[0]!.slice(0, 15) },
      { attribute: "container", operator: "starts_with", value: "/a/" },
    ],
    [{ attribute: "id", operator: "equals", value: ids.at(-1)! }],
  ],
};

describe.skipIf(STORE_UNAVAILABLE)("search, differentially against a reference evaluator", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  const setClock = (ms: number) => server.clock.advance(ms - server.clock.now().getTime());

  /** A fresh tenant per corpus, so corpora never see each other. */
  async function load(model: ModelToken[]) {
    const tenant = await server.request("POST", "/tenants", { body: { name: "differential" } });
    expect(tenant.status, tenant.text).toBe(201);
    const admin = tenant.body.application.key as string;
    const keys: Record<string, string> = {};
    const appIds: Record<string, string> = {};
    const apps: [string, string[], string[]][] = [
      ["searcher", ["token:search", "token:create", "token:update"], ["/"]],
      ["creator", ["token:create"], ["/"]],
      ["updater", ["token:update", "token:read"], ["/"]],
      ...Object.entries(SEARCHERS).map(([name, containers]): [string, string[], string[]] => [
        name,
        ["token:search"],
        containers,
      ]),
    ];
    for (const [name, permissions, containers] of apps) {
      const rules = containers.map((container, i) => ({
        priority: i + 1,
        container,
        transform: "reveal",
        permissions,
      }));
      const app = await server.request("POST", "/applications", {
        key: admin,
        body: { name, type: "private", rules },
      });
      expect(app.status, app.text).toBe(201);
      keys[name] = app.body.key as string;
      appIds[name] = app.body.id as string;
    }
    const corpus: Stored[] = [];
    for (const [i, t] of model.entries()) {
      setClock(t.createdAt);
      const createdBy = i % 3 === 0 ? "creator" : "searcher";
      const response = await server.request("POST", "/tokens", {
        key: keys[createdBy]!,
        body: {
          type: t.kind,
          data: t.data,
          containers: t.containers,
          metadata: t.metadata,
          ...(t.kind === "token" && t.indexed && { search_indexes: ["{{ data }}"] }),
          ...(t.expiresAt !== undefined && { expires_at: new Date(t.expiresAt).toISOString() }),
        },
      });
      expect(response.status, response.text).toBe(201);
      corpus.push({ ...t, id: response.body.id as string, createdBy });
    }
    for (const t of corpus.filter((c) => c.patch !== undefined)) {
      const patch = t.patch!;
      setClock(patch.at);
      const by = patch.byUpdater ? "updater" : "searcher";
      const response = await server.request("PATCH", `/tokens/${t.id}`, {
        key: keys[by]!,
        rawBody: JSON.stringify({ metadata: { region: patch.region } }),
        contentType: "application/merge-patch+json",
      });
      expect(response.status, response.text).toBe(200);
      t.metadata = { ...t.metadata, region: patch.region };
      t.modifiedAt = patch.at;
      t.modifiedBy = by;
    }
    setClock(QUERY_TIME);
    const page = await server.request("POST", "/applications", {
      key: admin,
      body: { name: "page", type: "public", permissions: ["token:create"] },
    });
    expect(page.status, page.text).toBe(201);
    const sessions: Record<string, { key: string; rules: Condition[][] }> = {};
    for (const [name, conditionsOf] of Object.entries(SESSION_SEARCHERS)) {
      const created = await server.request("POST", "/sessions", { key: page.body.key });
      expect(created.status, created.text).toBe(201);
      const alternatives = conditionsOf(corpus.map((t) => t.id));
      const authorized = await server.request("POST", "/sessions/authorize", {
        key: keys.searcher!,
        body: {
          nonce: created.body.nonce,
          rules: alternatives.map((conditions, i) => ({
            priority: i + 1,
            conditions,
            transform: "reveal",
            permissions: ["token:search"],
          })),
        },
      });
      expect(authorized.status, authorized.text).toBe(200);
      sessions[name] = { key: created.body.session_key, rules: alternatives };
    }
    return { corpus, keys, appIds, sessions };
  }

  /** The whole answer in one page, then a middle page of two, whose total must still be the whole count. */
  async function answer(key: string, query: string): Promise<string[]> {
    const response = await server.request("POST", "/tokens/search", { key, body: { query, size: 100 } });
    expect(response.status, `${query}: ${response.text}`).toBe(200);
    const found = (response.body.data as { id: string }[]).map((t) => t.id);
    expect(response.body.pagination.total_items, query).toBe(found.length);
    const middle = await server.request("POST", "/tokens/search", { key, body: { query, size: 2, page: 2 } });
    expect(
      (middle.body.data as { id: string }[]).map((t) => t.id),
      query,
    ).toEqual(found.slice(2, 4));
    expect(middle.body.pagination.total_items, `${query} (page 2 of 2)`).toBe(found.length);
    return found;
  }

  it("agrees with the reference on random corpora and queries", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(tokenArb, { minLength: 5, maxLength: 25 }),
        fc.integer(),
        async (model, seed) => {
          const { corpus, keys, appIds, sessions } = await load(model);
          const ids = corpus.map((t) => t.id);
          const queries = fc.sample(queryArb(ids, appIds), { numRuns: 30, seed });
          expect(await answer(keys.searcher!, "")).toEqual(expected(undefined, corpus, appIds, ["/"]));
          for (const q of queries) {
            const text = render(q);
            expect(await answer(keys.searcher!, text), text).toEqual(expected(q, corpus, appIds, ["/"]));
            for (const [name, rules] of Object.entries(SEARCHERS)) {
              expect(await answer(keys[name]!, text), `${name}: ${text}`).toEqual(
                expected(q, corpus, appIds, rules),
              );
            }
            for (const [name, session] of Object.entries(sessions)) {
              expect(await answer(session.key, text), `${name}: ${text}`).toEqual(
                expectedForSession(q, corpus, appIds, session.rules),
              );
            }
          }
        },
      ),
      { numRuns: 6 },
    );
  }, 180_000);
});
