import { CompiledQuery, sql, type Kysely, type RawBuilder, type SqlBool } from "kysely";
import { ROOT } from "../access/decide.js";
import type { Condition } from "../access/rules.js";
import type { Database } from "../storage/schema.js";
import type { Predicate } from "./predicate.js";

/** Who is searching and what they may see; everything a query is scoped by besides the query itself. */
export interface SearchScope {
  readonly tenantId: string;
  /** Tokens expired at this instant are invisible (ISO text, as stored). */
  readonly now: string;
  /** Containers of the caller's rules that hold `token:search`; the root among them means every token. */
  readonly visiblePaths: readonly string[];
  /**
   * A session's condition rules (access/decide.ts reachOf), which a token must satisfy too; run.ts makes them
   * part of the predicate, so the compiler sees only terms.
   */
  readonly conditions?: readonly (readonly Condition[])[];
  /** The blind index of a data value under the tenant's index key (crypto/blind-index.ts). */
  readonly blind: (value: string) => string;
}

/**
 * A place in the result order (created_at descending, then id descending): a keyset page holds the tokens after
 * it. Both columns never change once a token is written, so a walk from key to key returns no token twice and
 * skips none that exists throughout, whatever is created or deleted meanwhile.
 */
export interface Keyset {
  readonly createdAt: string;
  readonly id: string;
}

/** The statements of one search: a page of token rows in result order (by offset or by keyset), the total. */
export interface CompiledSearch {
  /** `limit` is a positive integer; each row holds PAGE_COLUMNS, in that order. */
  page(offset: number, limit: number): RawBuilder<Database["tokens"]>;
  /** The first `limit` tokens after `after` (from the start without it), in result order. */
  after(after: Keyset | undefined, limit: number): RawBuilder<Database["tokens"]>;
  count(): RawBuilder<{ n: number | string | bigint }>;
}

/**
 * What a page statement reads of each token, in this order: everything but the tenant, which the search is
 * scoped by. Readers that take rows as arrays (tokens/store.ts) rely on the order.
 */
export const PAGE_COLUMNS = [
  "id",
  "type",
  "ciphertext",
  "key_version",
  "fingerprint",
  "fingerprint_expression",
  "mask",
  "search_indexes",
  "metadata",
  "containers",
  "expires_at",
  "created_by",
  "created_at",
  "modified_by",
  "modified_at",
] as const;
const PAGE_SELECT = sql.join(PAGE_COLUMNS.map((column) => sql.ref(`t.${column}`)));

type IndexTable = "token_data_index" | "token_metadata_index" | "token_container_index";
/** The terms whose index rows a search can walk. */
type Driver = Extract<Predicate, { kind: "data" | "metadata" | "container" }>;

/**
 * Where rows come from. `tokens` walks the tokens table in created_at order; an index table walks the rows of
 * one positive term of a top-level conjunction (the "driver"), whose key ends in (created_at, token_id), so the
 * result order comes from the index and no sort is needed (checked with EXPLAIN in docs/search.md).
 */
interface Source {
  readonly from: RawBuilder<unknown>;
  readonly alias: "t" | "d";
  /** The column holding the token id, and the other columns this source has. */
  readonly columns: Readonly<Record<string, string>>;
}

const TOKENS: Source = {
  from: sql`tokens as t`,
  alias: "t",
  columns: {
    id: "id",
    type: "type",
    fingerprint: "fingerprint",
    created_by: "created_by",
    modified_by: "modified_by",
    created_at: "created_at",
    modified_at: "modified_at",
    expires_at: "expires_at",
  },
};

const indexSource = (table: IndexTable): Source => ({
  from: sql`${sql.table(table)} as d`,
  alias: "d",
  columns: { id: "token_id", type: "type", created_at: "created_at", expires_at: "expires_at" },
});

/** The nullable token columns: a comparison with NULL must read as false, never unknown, or NOT would lie. */
const NULLABLE = new Set(["fingerprint", "created_by", "modified_by", "modified_at"]);

/**
 * Compiles a predicate (or `undefined`: everything) into SQL over the tenant's tokens, with visibility and
 * expiry inside the statement so that pages are full and totals exact. Values are always parameters.
 */
export function compileSearch(
  predicate: Predicate | undefined,
  scope: SearchScope,
  generation = false,
): CompiledSearch {
  return build(predicate, scope, coveredByRules(predicate, scope), generation);
}

/**
 * PostgreSQL: the tenant's token generation (migration 0014), the sum of its slots, which every token write of the
 * tenant grows in its own transaction. Read in the statement whose result it stamps, so both are of one snapshot.
 */
export function tokenGeneration(tenantId: string): RawBuilder<string> {
  return sql<string>`(select coalesce(sum(g.value), 0) from token_changes as g where g.tenant_id = ${tenantId})`;
}

/** Whether the caller's rules cover every token the query can find, so that no rule check per row is needed. */
function coveredByRules(predicate: Predicate | undefined, scope: SearchScope): boolean {
  const driver = pickDriver(conjunctsOf(predicate));
  // A container driver under one of the caller's rule containers holds only tokens the caller may see.
  return (
    scope.visiblePaths.includes(ROOT) ||
    (driver?.kind === "container" && scope.visiblePaths.some((path) => driver.path.startsWith(path)))
  );
}

function conjunctsOf(predicate: Predicate | undefined): Predicate[] {
  return (
    (predicate === undefined ? [] : predicate.kind === "and" ? predicate.children : [predicate])
      // `container:"/*"` holds for every token; at the top it filters nothing.
      .filter((p) => p.kind !== "everything")
  );
}

/**
 * `generation` (PostgreSQL): every page row ends with the tenant's token generation (PAGE_COLUMNS, then it), and
 * the count comes with it and with the next expiry after `now`, so that one round trip answers what a cached
 * total is valid for.
 */
function build(
  predicate: Predicate | undefined,
  scope: SearchScope,
  allVisible: boolean,
  generation: boolean,
): CompiledSearch {
  const conjuncts = conjunctsOf(predicate);
  const driver = pickDriver(conjuncts);
  const rest = conjuncts.filter((p) => p !== driver);
  const source = driver === undefined ? TOKENS : indexSource(driverTable(driver));
  const onSource = rest.filter((p) => availableOn(p, source));
  const onTokens = rest.filter((p) => !availableOn(p, source));
  const joinTokens = onTokens.length > 0;

  const compiler = new Compiler(scope);
  const s = source.alias;
  const conditions: RawBuilder<SqlBool>[] = [
    sql<SqlBool>`${sql.ref(`${s}.tenant_id`)} = ${scope.tenantId}`,
    ...(driver === undefined ? [] : [compiler.driverKey(driver)]),
    sql<SqlBool>`(${sql.ref(`${s}.expires_at`)} is null or ${sql.ref(`${s}.expires_at`)} > ${scope.now})`,
    ...onSource.map((p) => compiler.compile(p, source)),
    ...onTokens.map((p) => compiler.compile(p, TOKENS)),
    // Last: the most expensive condition, an index probe per row, runs on the fewest rows.
    ...(allVisible ? [] : [compiler.visible(source)]),
  ];
  const where = sql<SqlBool>`${sql.join(conditions, sql` and `)}`;
  const from = joinTokens
    ? sql`${source.from} join tokens as t on t.tenant_id = d.tenant_id and t.id = d.token_id`
    : source.from;
  const id = sql.ref(`${s}.${source.columns.id!}`);
  const created = sql.ref(`${s}.created_at`);
  // A caller with no rule for searching sees nothing; the statement still runs, so the answer has one shape.
  const noMatch = scope.visiblePaths.length === 0;

  // The page is chosen on the narrowest rows (index only, when it can be), and only its tokens are read.
  // LIMIT is the one value written into the text: SQLite (3.53) prepares a statement again on every run when
  // its LIMIT is a bound parameter, which cost more than a small search itself. It is a checked integer (an
  // integer cannot carry SQL), and the API allows 1 to 100 (101 for a keyset page, which reads one more to
  // know whether another follows), so the statement cache holds one per size used.
  const stamp = generation ? sql`, ${tokenGeneration(scope.tenantId)} as generation` : sql``;
  const page = (condition: RawBuilder<SqlBool>, limit: number, offset: RawBuilder<unknown>) => {
    if (!Number.isSafeInteger(limit) || limit < 1) {
      throw new RangeError(`a search page holds a positive whole number of tokens, not ${limit}`);
    }
    return sql<Database["tokens"]>`
        select ${PAGE_SELECT}${stamp} from (
          select ${id} as token_id, ${created} as created_at from ${from}
          where ${condition}
          order by ${created} desc, ${id} desc
          limit ${sql.lit(limit)}${offset}
        ) as p
        join tokens as t on t.tenant_id = ${scope.tenantId} and t.id = p.token_id
        order by p.created_at desc, p.token_id desc`;
  };
  const matching = noMatch ? sql<SqlBool>`1 = 0` : where;

  return {
    page(offset, limit) {
      return page(matching, limit, sql` offset ${offset}`);
    },
    after(after, limit) {
      // A row value, so that both engines walk the (…, created_at, id) index from the key rather than filter.
      const past =
        after === undefined
          ? matching
          : sql<SqlBool>`${matching} and (${created}, ${id}) < (${after.createdAt}, ${after.id})`;
      return page(past, limit, sql``);
    },
    count() {
      const stamps = generation
        ? sql`, ${tokenGeneration(scope.tenantId)} as generation,
            (select min(e.expires_at) from tokens as e where e.expires_at > ${scope.now}) as next`
        : sql``;
      return sql<{
        n: number;
      }>`select count(*) as n${stamps} from ${from} where ${noMatch ? sql`1 = 0` : where}`;
    },
  };
}

/** The most selective positive term to walk: a data value, then metadata, then an exact container, a subtree. */
function pickDriver(conjuncts: readonly Predicate[]): Driver | undefined {
  const rank = (p: Driver) => (p.kind === "data" ? 0 : p.kind === "metadata" ? 1 : p.subtree ? 3 : 2);
  let best: Driver | undefined;
  for (const p of conjuncts) {
    if (p.kind !== "data" && p.kind !== "metadata" && p.kind !== "container") continue;
    if (best === undefined || rank(p) < rank(best)) best = p;
  }
  return best;
}

function driverTable(driver: Driver): IndexTable {
  switch (driver.kind) {
    case "data":
      return "token_data_index";
    case "metadata":
      return "token_metadata_index";
    case "container":
      return "token_container_index";
  }
}

/** Whether every column `p` needs exists on `source` (index rows repeat only id, type and the dates). */
function availableOn(p: Predicate, source: Source): boolean {
  switch (p.kind) {
    case "and":
    case "or":
      return p.children.every((child) => availableOn(child, source));
    case "not":
      return availableOn(p.child, source);
    case "equals":
    case "during":
    case "prefix":
      return p.column in source.columns;
    case "data":
    case "metadata":
    case "container":
    case "everything":
      return true;
  }
}

class Compiler {
  constructor(private readonly scope: SearchScope) {}

  /** The driver's own term, as an equality on its index key (so the walk is a range of that index). */
  driverKey(driver: Driver): RawBuilder<SqlBool> {
    switch (driver.kind) {
      case "data":
        return sql<SqlBool>`d.blind_value = ${this.scope.blind(driver.value)}`;
      case "metadata":
        return sql<SqlBool>`d.key = ${driver.key} and d.value_folded = ${driver.value}`;
      case "container":
        return driver.subtree
          ? sql<SqlBool>`d.path = ${driver.path}`
          : sql<SqlBool>`d.path = ${driver.path} and d.exact = 1`;
    }
  }

  /**
   * The caller's rules, as one probe per candidate: does the token lie under one of these paths. Correlated on
   * purpose: it costs one index lookup per row looked at, where a list of every visible token would cost as
   * many rows as the tenant has.
   */
  visible(source: Source): RawBuilder<SqlBool> {
    const id = sql.ref(`${source.alias}.${source.columns.id!}`);
    const paths = this.scope.visiblePaths;
    return sql<SqlBool>`exists (
      select 1 from token_container_index as v
      where v.tenant_id = ${this.scope.tenantId} and v.token_id = ${id}
        and v.path in (${sql.join(paths.map((path) => sql`${path}`))}))`;
  }

  compile(p: Predicate, source: Source): RawBuilder<SqlBool> {
    const column = (name: string) => sql.ref(`${source.alias}.${source.columns[name]!}`);
    const id = column("id");
    const tenant = this.scope.tenantId;
    switch (p.kind) {
      case "and":
      case "or":
        return sql<SqlBool>`(${sql.join(
          p.children.map((child) => this.compile(child, source)),
          p.kind === "and" ? sql` and ` : sql` or `,
        )})`;
      case "not":
        return sql<SqlBool>`not (${this.compile(p.child, source)})`;
      case "prefix":
        // By its first characters rather than LIKE, where `%` and `_` in a value would be wildcards.
        return sql<SqlBool>`substr(${column(p.column)}, 1, length(cast(${p.value} as text))) = ${p.value}`;
      case "equals":
        return NULLABLE.has(p.column)
          ? sql<SqlBool>`(${column(p.column)} is not null and ${column(p.column)} = ${p.value})`
          : sql<SqlBool>`${column(p.column)} = ${p.value}`;
      case "during": {
        const col = column(p.column);
        const parts = [
          ...(NULLABLE.has(p.column) ? [sql`${col} is not null`] : []),
          ...(p.from === undefined ? [] : [sql`${col} >= ${p.from}`]),
          ...(p.to === undefined ? [] : [sql`${col} < ${p.to}`]),
        ];
        return parts.length === 0 ? sql<SqlBool>`1 = 1` : sql<SqlBool>`(${sql.join(parts, sql` and `)})`;
      }
      case "data":
        return sql<SqlBool>`${id} in (
          select token_id from token_data_index
          where tenant_id = ${tenant} and blind_value = ${this.scope.blind(p.value)})`;
      case "metadata":
        return sql<SqlBool>`${id} in (
          select token_id from token_metadata_index
          where tenant_id = ${tenant} and key = ${p.key} and value_folded = ${p.value})`;
      case "container":
        return p.subtree
          ? sql<SqlBool>`${id} in (
              select token_id from token_container_index where tenant_id = ${tenant} and path = ${p.path})`
          : sql<SqlBool>`${id} in (
              select token_id from token_container_index
              where tenant_id = ${tenant} and path = ${p.path} and exact = 1)`;
      case "everything":
        return sql<SqlBool>`1 = 1`;
    }
  }
}

/**
 * Compiled statements by the shape of their search, because building and compiling them through Kysely cost
 * about as much as running a small search. Two searches of one shape (the same terms and operators, as many rule
 * containers, the same page size) differ only in their parameters: the statement is compiled once from a
 * template whose every value is a numbered marker, and each search then binds its own values by position. Values
 * never reach the SQL text, so a cached text holds none (data values are blinded before binding, as always).
 */
export function searchStatements<DB>(db: Kysely<DB>, { capacity = 200, generation = false } = {}) {
  const cache = new Map<string, { sql: string; slots: number[] }>();

  function statement(shape: string, template: () => RawBuilder<unknown>, values: readonly unknown[]) {
    let entry = cache.get(shape);
    if (entry === undefined) {
      const compiled = template().compile(db);
      entry = { sql: compiled.sql, slots: compiled.parameters.map(slotOf) };
      if (cache.size >= capacity) cache.delete(cache.keys().next().value as string);
      cache.set(shape, entry);
    }
    return CompiledQuery.raw(
      entry.sql,
      entry.slots.map((slot) => values[slot]),
    );
  }

  return {
    page(predicate: Predicate | undefined, scope: SearchScope, offset: number, limit: number): CompiledQuery {
      const { shape, values, template } = parameterize(predicate, scope, offset);
      return statement(
        `page:${limit}:${shape}`,
        () => template(generation).page(MARKED_OFFSET, limit),
        values,
      );
    },
    after(
      predicate: Predicate | undefined,
      scope: SearchScope,
      after: Keyset | undefined,
      limit: number,
    ): CompiledQuery {
      const { shape, values, template } = parameterize(predicate, scope, 0);
      const marked = after && {
        createdAt: marker(values.push(after.createdAt) - 1),
        id: marker(values.push(after.id) - 1),
      };
      return statement(
        `after:${limit}:${marked === undefined ? "first" : "next"}:${shape}`,
        () => template(generation).after(marked, limit),
        values,
      );
    },
    count(predicate: Predicate | undefined, scope: SearchScope): CompiledQuery {
      const { shape, values, template } = parameterize(predicate, scope, 0);
      return statement(`count:${shape}`, () => template(generation).count(), values);
    },
  };
}

/** Only a template's parameters are read as markers, and every one of them is a marker. */
const MARK = "\u0000value ";
/** The marker of the offset, which the template's page takes as its value. */
const MARKED_OFFSET = -1;

/** A numbered marker standing for the value at that index; it can only come from a template. */
function marker(index: number): string {
  return `${MARK}${index}`;
}

function slotOf(parameter: unknown): number {
  if (parameter === MARKED_OFFSET) return 0;
  const index =
    typeof parameter === "string" && parameter.startsWith(MARK) ? Number(parameter.slice(MARK.length)) : NaN;
  // Every parameter of a template is a marker; anything else would be a value fixed into the cached statement.
  if (!Number.isSafeInteger(index)) throw new Error("a search template holds a value that is not a marker");
  return index;
}

/**
 * The search with every value replaced by a marker, as a shape (the key of its statements) and a template to
 * compile, and the values in marker order. Index 0 is the page's offset. Whether the rules cover everything
 * depends on the values, so it is decided here on the real ones and is part of the shape.
 */
function parameterize(predicate: Predicate | undefined, scope: SearchScope, offset: number) {
  const values: unknown[] = [offset];
  const mark = (value: unknown): string => {
    values.push(value);
    return marker(values.length - 1);
  };
  const marked = (p: Predicate): Predicate => {
    switch (p.kind) {
      case "and":
      case "or":
        return { kind: p.kind, children: p.children.map(marked) };
      case "not":
        return { kind: "not", child: marked(p.child) };
      case "equals":
      case "prefix":
        return { ...p, value: mark(p.value) };
      case "during":
        return {
          kind: p.kind,
          column: p.column,
          ...(p.from !== undefined && { from: mark(p.from) }),
          ...(p.to !== undefined && { to: mark(p.to) }),
        };
      case "data":
        return { kind: "data", value: mark(scope.blind(p.value)) };
      case "metadata":
        return { kind: "metadata", key: mark(p.key), value: mark(p.value) };
      case "container":
        return { ...p, path: mark(p.path) };
      case "everything":
        return p;
    }
  };
  const allVisible = coveredByRules(predicate, scope);
  const markedScope: SearchScope = {
    tenantId: mark(scope.tenantId),
    now: mark(scope.now),
    visiblePaths: scope.visiblePaths.map(mark),
    // Data values are blinded above, before they are marked.
    blind: (value) => value,
  };
  const markedPredicate = predicate === undefined ? undefined : marked(predicate);
  const shape = JSON.stringify([markedPredicate ?? null, scope.visiblePaths.length, allVisible]);
  return {
    shape,
    values,
    template: (generation: boolean) => build(markedPredicate, markedScope, allVisible, generation),
  };
}
