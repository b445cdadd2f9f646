import { CompiledQuery, Kysely, PostgresDialect, SqliteDialect, type SqliteDatabase } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { blindIndex } from "../crypto/blind-index.js";
import { type Store } from "../storage/database.js";
import { migrateToLatest } from "../storage/migrate.js";
import type { Database } from "../storage/schema.js";
import { STORE, createTestDatabase, type TestDatabase } from "../../test/harness.js";
import { compileSearch, searchStatements, type SearchScope } from "./compile.js";
import { parseQuery } from "./parser.js";
import { toPredicate } from "./predicate.js";

const INDEX_KEY = Buffer.alloc(32, 7);
const scope = (visiblePaths: string[] = ["/"]): SearchScope => ({
  tenantId: "tenant-1",
  now: "2026-01-01T00:00:00.000Z",
  visiblePaths,
  blind: (value) => blindIndex(INDEX_KEY, value),
});
const compiled = (query: string, visiblePaths?: string[]) => {
  const tree = parseQuery(query);
  return compileSearch(
    tree && toPredicate(tree, { types: ["token", "social_security_number"] }),
    scope(visiblePaths),
  );
};

/** Compiling needs a dialect, not a connection: neither of these ever connects. */
const sqliteDb = new Kysely<Database>({
  dialect: new SqliteDialect({ database: {} as SqliteDatabase }),
});
const postgresDb = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool() }) });

describe("search SQL", () => {
  afterAll(async () => {
    await postgresDb.destroy();
  });

  it("compiles a shape once and binds each search's own values, as compileSearch would", () => {
    // Pairs of one shape with different values, then other shapes; each answer must be the uncached one.
    const queries = [
      'data:"123-45-6789" AND metadata.region:eu AND type:token',
      'data:"987-65-4321" AND metadata.tier:gold AND type:social_security_number',
      "metadata.customer_id:cust-1",
      "metadata.customer_id:cust-2",
      'container:"/pci/*" -container:"/pci/high/*" created_at:[2024-01-01 TO *]',
      'container:"/pii/*" -container:"/pii/low/*" created_at:[2025-06-01 TO *]',
      "(type:token OR fingerprint:abc) AND NOT modified_by:x modified_at:{* TO 2025-01-01}",
      "(type:social_security_number OR fingerprint:def) AND NOT modified_by:y modified_at:{* TO 2026-01-01}",
      "created_at:2024-01-31",
      "",
    ];
    for (const db of [sqliteDb, postgresDb]) {
      const statements = searchStatements(db);
      for (const paths of [["/"], ["/pci/", "/pii/"], ["/pii/", "/bank/"], []]) {
        for (const query of queries) {
          const tree = parseQuery(query);
          const predicate = tree && toPredicate(tree, { types: ["token", "social_security_number"] });
          const expected = compileSearch(predicate, scope(paths));
          for (const [offset, size] of [
            [0, 20],
            [40, 20],
            [0, 7],
          ] as const) {
            const page = statements.page(predicate, scope(paths), offset, size);
            const uncached = expected.page(offset, size).compile(db);
            expect({ sql: page.sql, parameters: page.parameters }).toEqual({
              sql: uncached.sql,
              parameters: uncached.parameters,
            });
          }
          const count = statements.count(predicate, scope(paths));
          const uncounted = expected.count().compile(db);
          expect({ sql: count.sql, parameters: count.parameters }).toEqual({
            sql: uncounted.sql,
            parameters: uncounted.parameters,
          });
        }
      }
    }
  });

  it("passes every value as a parameter, and a data value only as its blind index", () => {
    const page = compiled('data:"Secret 123" AND metadata.region:eu AND type:token').page(40, 20);
    for (const db of [sqliteDb, postgresDb]) {
      const { sql: text, parameters } = page.compile(db);
      expect(text).not.toMatch(/secret|eu|token'/i);
      expect(parameters).toContain(blindIndex(INDEX_KEY, "secret 123"));
      expect(parameters).toEqual(expect.arrayContaining(["tenant-1", "region", "eu", "token", 40]));
      expect(JSON.stringify(parameters).toLowerCase()).not.toContain("secret");
      // The page size alone is written into the text (a checked integer; see compile.ts).
      expect(text).toMatch(/limit 20 offset (\?|\$\d+)/);
    }
    expect(page.compile(sqliteDb).sql).toContain("d.blind_value = ?");
    for (const size of [0, -1, 2.5, Number.NaN, 2 ** 53]) {
      expect(() => compiled("type:token").page(0, size)).toThrow(RangeError);
    }
    expect(page.compile(postgresDb).sql).toMatch(/d\.blind_value = \$\d+/);
  });

  it("binds a keyset page's place as parameters, and compiles it once per shape", () => {
    for (const db of [sqliteDb, postgresDb]) {
      const statements = searchStatements(db);
      for (const query of ["metadata.region:eu AND type:token", 'container:"/pci/*"', ""]) {
        const tree = parseQuery(query);
        const predicate = tree && toPredicate(tree, { types: ["token", "social_security_number"] });
        for (const after of [
          undefined,
          { createdAt: "2025-01-01T00:00:00.000Z", id: "a" },
          { createdAt: "x", id: "b" },
        ]) {
          const cached = statements.after(predicate, scope(), after, 21);
          const uncached = compileSearch(predicate, scope()).after(after, 21).compile(db);
          expect({ sql: cached.sql, parameters: cached.parameters }).toEqual({
            sql: uncached.sql,
            parameters: uncached.parameters,
          });
          if (after !== undefined)
            expect(cached.parameters).toEqual(expect.arrayContaining([after.createdAt, after.id]));
          expect(cached.sql).toMatch(/limit 21\s*\)/);
        }
      }
    }
  });

  it("walks the driver's index rows and joins tokens only for what index rows lack", () => {
    const indexOnly = compiled("metadata.region:eu AND type:token AND created_at:[2025-01-01 TO *]");
    expect(indexOnly.count().compile(sqliteDb).sql).not.toContain("join tokens");
    const needsTokens = compiled("metadata.region:eu AND fingerprint:abc");
    expect(needsTokens.count().compile(sqliteDb).sql).toContain("join tokens as t");
  });
});

/**
 * The plans of the main query shapes on SQLite: each walks an index in result order (no temporary B-tree to
 * sort), and a count reads index rows only. docs/search.md shows the same plans at a million tokens.
 */
describe.skipIf(STORE !== "sqlite")("search plans on SQLite", () => {
  let database: TestDatabase;
  let store: Store;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = database.open();
    await migrateToLatest(store);
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  const KEY = { createdAt: "2025-06-01T00:00:00.000Z", id: "0197" };
  async function plan(query: ReturnType<typeof compiled>, part: "page" | "after" | "count"): Promise<string> {
    const statement = (
      part === "page" ? query.page(0, 20) : part === "after" ? query.after(KEY, 21) : query.count()
    ).compile(store.db);
    const { rows } = await store.db.executeQuery<{ detail: string }>(
      CompiledQuery.raw(`explain query plan ${statement.sql}`, [...statement.parameters]),
    );
    return rows.map((r) => r.detail).join("\n");
  }

  it.each([
    // `d` is the driving index table (search/compile.ts); its primary key is the index.
    ["data:123-45-6789", "SEARCH d USING PRIMARY KEY (tenant_id=? AND blind_value=?)"],
    ["metadata.customer_id:cust-1", "SEARCH d USING PRIMARY KEY (tenant_id=? AND key=? AND value_folded=?)"],
    [
      "type:social_security_number AND metadata.region:eu AND created_at:[2025-01-01 TO *]",
      "SEARCH d USING PRIMARY KEY (tenant_id=? AND key=? AND value_folded=? AND created_at>?)",
    ],
    ['container:"/pci/*"', "SEARCH d USING PRIMARY KEY (tenant_id=? AND path=?)"],
    ['container:"/pci/high/"', "SEARCH d USING PRIMARY KEY (tenant_id=? AND path=?)"],
    ["type:token", "tokens_type_idx"],
    ["created_at:[2025-01-01 TO 2025-02-01]", "tokens_created_idx"],
    ["", "tokens_created_idx"],
  ])("%s: %s, in order", async (query, index) => {
    for (const paths of [["/"], ["/pci/", "/pii/"]]) {
      const page = await plan(compiled(query, paths), "page");
      expect(page, page).toContain(index);
      expect(page, page).not.toMatch(/TEMP B-TREE/);
      // A keyset page starts its walk of the same index at the key, not from the first row.
      const after = await plan(compiled(query, paths), "after");
      expect(after, after).toContain(index.replace(/\)$/, ""));
      expect(after, after).not.toMatch(/TEMP B-TREE/);
      expect(after, after).toMatch(
        /created_at<\?|\(created_at,token_id\)<\(\?,\?\)|\(created_at,id\)<\(\?,\?\)/,
      );
      const count = await plan(compiled(query, paths), "count");
      expect(count, count).toContain(index);
      expect(count, count).not.toMatch(/TEMP B-TREE|SCAN tokens\b/);
    }
  });

  it("probes the caller's rules per row through the container index", async () => {
    const page = await plan(compiled("type:token", ["/pci/"]), "page");
    expect(page).toMatch(/token_container_index_token_idx/);
  });
});

/**
 * The same on PostgreSQL (issue 23), on enough rows (30,000, analysed) that the planner weighs an index walk against
 * a scan and a sort: each page and each keyset page walks an index in result order (no Sort node), a keyset page
 * starts at its key inside the index condition, and the statements carry the tenant's token generation.
 */
describe.skipIf(STORE !== "postgres")("search plans on PostgreSQL", () => {
  let database: TestDatabase;
  let store: Store;
  const TOKENS = 30_000;

  beforeAll(async () => {
    database = await createTestDatabase();
    store = database.open();
    await migrateToLatest(store);
    const run = (text: string, parameters: unknown[] = []) =>
      store.db.executeQuery(CompiledQuery.raw(text, parameters));
    await run(
      `insert into tenants (id, name, created_at) values ('tenant-1', 't', '2020-01-01T00:00:00.000Z')`,
    );
    // A minute apart from 2020 on: every third token a `token`, the rest SSNs; one in ten under /pci/.
    await run(
      `insert into tokens (tenant_id, id, type, ciphertext, key_version, search_indexes, metadata, containers, created_at)
       select 'tenant-1', lpad(i::text, 8, '0'),
         case when i % 3 = 0 then 'token' else 'social_security_number' end, 'c', 1, '[]', '{}', '[]',
         to_char(timestamp '2020-01-01' + i * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS.000"Z"')
       from generate_series(1, $1::integer) as i`,
      [TOKENS],
    );
    const tail = "created_at, id, type, expires_at from tokens";
    await run(`insert into token_container_index (tenant_id, path, exact, created_at, token_id, type, expires_at)
      select tenant_id, case when id::integer % 10 = 0 then '/pci/' else '/general/' end, 1, ${tail}`);
    await run(`insert into token_metadata_index (tenant_id, key, value_folded, created_at, token_id, type, expires_at)
      select tenant_id, 'customer_id', 'cust-' || (id::integer % 3000), ${tail}`);
    await run(`insert into token_metadata_index (tenant_id, key, value_folded, created_at, token_id, type, expires_at)
      select tenant_id, 'region', case when id::integer % 5 = 0 then 'eu' else 'us' end, ${tail}`);
    await run(
      `insert into token_data_index (tenant_id, blind_value, created_at, token_id, type, expires_at)
       select tenant_id, case when id = '00001234' then $1 else 'other-' || id end, ${tail}`,
      [blindIndex(INDEX_KEY, "123-45-6789")],
    );
    await run("analyze");
  });
  afterAll(async () => {
    await store?.close();
    await database?.drop();
  });

  const KEY = { createdAt: "2020-01-10T00:00:00.000Z", id: "00012000" };
  const statementOf = (query: ReturnType<typeof compiled>, part: "page" | "after" | "count") =>
    (part === "page" ? query.page(0, 20) : part === "after" ? query.after(KEY, 21) : query.count()).compile(
      store.db,
    );
  const lines = (rows: readonly { "QUERY PLAN": string }[]) => rows.map((r) => r["QUERY PLAN"]).join("\n");

  async function plan(query: ReturnType<typeof compiled>, part: "page" | "after" | "count"): Promise<string> {
    const statement = statementOf(query, part);
    const { rows } = await store.db.executeQuery<{ "QUERY PLAN": string }>(
      CompiledQuery.raw(`explain (costs off) ${statement.sql}`, [...statement.parameters]),
    );
    return lines(rows);
  }

  /**
   * The plan PostgreSQL keeps for a prepared statement once it stops planning each execution: search statements run
   * named (storage/postgres.ts), and after five executions PostgreSQL may reuse one plan made without the values.
   * That plan must walk the same index in order as the plans made with them, whatever values come later.
   */
  async function genericPlan(query: ReturnType<typeof compiled>, part: "page" | "after"): Promise<string> {
    const statement = statementOf(query, part);
    const literal = (value: unknown) => `'${String(value).replaceAll("'", "''")}'`;
    return store.db.connection().execute(async (connection) => {
      const run = (text: string) =>
        connection.executeQuery<{ "QUERY PLAN": string }>(CompiledQuery.raw(text));
      await run("set plan_cache_mode = force_generic_plan");
      try {
        await run(`prepare generic as ${statement.sql}`);
        const { rows } = await run(
          `explain (costs off) execute generic${
            statement.parameters.length === 0 ? "" : `(${statement.parameters.map(literal).join(", ")})`
          }`,
        );
        return lines(rows);
      } finally {
        await run("deallocate all");
        await run("reset plan_cache_mode");
      }
    });
  }

  /** Each search shape, and the index its pages must walk in result order. */
  const SHAPES = [
    ["data:123-45-6789", "token_data_index_pk"],
    ["metadata.customer_id:cust-1", "token_metadata_index_pk"],
    [
      "type:social_security_number AND metadata.region:eu AND created_at:[2020-01-05 TO *]",
      "token_metadata_index_pk",
    ],
    ['container:"/pci/*"', "token_container_index_pk"],
    ["type:token", "tokens_type_idx"],
    ["", "tokens_created_idx"],
  ] as const;
  const VISIBLE = [["/"], ["/pci/", "/general/"]];

  function expectIndexWalk(text: string, index: string, part: "page" | "after"): void {
    expect(text, text).toMatch(new RegExp(`Index (Only )?Scan Backward using ${index}`));
    expect(text, text).not.toMatch(/Sort/);
    // The walk starts at the key: the row comparison is an index condition, not a filter on every row.
    if (part === "after")
      expect(text, text).toMatch(/Index Cond: .*ROW\(.*created_at, .*(token_id|id)\) < ROW\(/);
  }

  it.each(SHAPES)("%s: %s, in order", async (query, index) => {
    for (const paths of VISIBLE) {
      for (const part of ["page", "after"] as const)
        expectIndexWalk(await plan(compiled(query, paths), part), index, part);
    }
  });

  it.each(SHAPES)(
    "%s: %s, in order, in the plan kept for the prepared statement too",
    async (query, index) => {
      for (const paths of VISIBLE) {
        for (const part of ["page", "after"] as const) {
          const generic = await genericPlan(compiled(query, paths), part);
          // A plan made without the values names the parameters where a custom plan would show the values.
          expect(generic, generic).toMatch(/tenant_id = \$1\b/);
          expectIndexWalk(generic, index, part);
        }
      }
    },
  );

  it("stamps pages and counts with the tenant's token generation, in the same statement", () => {
    const statements = searchStatements(store.db, { generation: true });
    const tree = parseQuery("type:token");
    const predicate = tree && toPredicate(tree, { types: ["token"] });
    for (const statement of [
      statements.page(predicate, scope(), 0, 20),
      statements.after(predicate, scope(), KEY, 21),
      statements.count(predicate, scope()),
    ]) {
      expect(statement.sql).toMatch(/sum\(g\.value\).*from token_changes as g where g\.tenant_id = \$\d+/s);
    }
    expect(statements.count(predicate, scope()).sql).toMatch(/min\(e\.expires_at\)/);
    expect(searchStatements(store.db).page(predicate, scope(), 0, 20).sql).not.toContain("token_changes");
  });
});
