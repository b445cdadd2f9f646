import type { Condition } from "../access/rules.js";
import { ROOT } from "../access/decide.js";
import type { Executor, Reads } from "../storage/database.js";
import type { TokensTable } from "../storage/schema.js";
import { PostgresAdapter, type CompiledQuery } from "kysely";
import { searchStatements, type Keyset, type PAGE_COLUMNS, type SearchScope } from "./compile.js";
import { parseQuery } from "./parser.js";
import { topLevelPaths, topLevelPathsAt } from "./top-level.js";
import { conditionsPredicate, toPredicate, type Predicate, type PredicateOptions } from "./predicate.js";
import { coversEverything, searchKey } from "./scope.js";
import { queryShape } from "./shape.js";

/** A row of a search page: the columns of PAGE_COLUMNS, in that order (tokens/store.ts reads it as a token). */
export type PageRow = ColumnsOf<typeof PAGE_COLUMNS>;
type ColumnsOf<T extends readonly (keyof TokensTable)[]> = {
  readonly [I in keyof T]: T[I] extends keyof TokensTable ? TokensTable[T[I]] : never;
};

const SEARCH_CACHE_SIZE = 500;

interface Held {
  readonly version: number;
  readonly until: string | null;
  readonly value: unknown;
}

/**
 * Results derived from the whole index — search totals, a tenant's top-level containers — kept while no token has
 * been written and, for totals, while no counted token has expired since (`until`: the earliest expiry still ahead
 * when it was counted). Exact, not merely recent: paging through a large result counts it once, not once per page.
 * The version is the store's token generation, which every token write by any connection or instance moves in its
 * own transaction: on SQLite one number (migration 0008), read before computing; on PostgreSQL the tenant's
 * (migration 0014), read in the same statement as the rows it stamps, so that both are of one snapshot.
 */
function searchCache() {
  const entries = new Map<string, Held>();
  return {
    get<T>(key: string, version: number | undefined, now: string): T | undefined {
      const hit = entries.get(key);
      return version !== undefined && hit?.version === version && (hit.until === null || now < hit.until)
        ? (hit.value as T)
        : undefined;
    },
    /** The entry whatever its version: PostgreSQL learns the current one only with the page. */
    latest<T>(key: string): { version: number; value: T } | undefined {
      const hit = entries.get(key);
      return hit && { version: hit.version, value: hit.value as T };
    },
    set(key: string, version: number, until: string | null, value: unknown): void {
      // A slower lookup that read an older generation must not replace a newer entry (generations only grow).
      const filed = entries.get(key);
      if (filed !== undefined && filed.version > version) return;
      entries.delete(key);
      if (entries.size >= SEARCH_CACHE_SIZE) entries.delete(entries.keys().next().value as string);
      entries.set(key, { version, until, value });
    },
  };
}

/** A page row on PostgreSQL: PAGE_COLUMNS, then the tenant's token generation. */
type StampedRow = readonly [...PageRow, string];
const generationOf = (rows: readonly StampedRow[]): number | undefined =>
  rows.length === 0 ? undefined : Number(rows[0]![rows[0]!.length - 1]);
const unstamped = (rows: readonly StampedRow[]): PageRow[] =>
  rows.map((row) => row.slice(0, -1) as unknown as PageRow);

/**
 * The one way into search (spec §4.1; `search` by offset, `walk` by keyset): the query parsed and checked (a QueryError names its place), its
 * predicate planned and compiled to one statement for the page and one for the total, both holding the
 * caller's visibility so that pages are full and totals exact, run on the store's read paths, the total kept
 * in the count cache. Answers the page's rows, the total, and the query's shape for the audit log (no values).
 */
export function createSearch(db: Executor, reads: Reads, types: PredicateOptions["types"]) {
  const cache = searchCache();
  // PostgreSQL has no version readable without a round trip: its statements carry the tenant's generation instead.
  const stamped = db.getExecutor().adapter instanceof PostgresAdapter;
  const searches = searchStatements(db, { generation: stamped });

  const parse = (query: string) => {
    const tree = parseQuery(query);
    return { predicate: tree && toPredicate(tree, { types }), shape: queryShape(tree) };
  };

  /** SQLite: the total, counted only when no cached one is valid at the token version read first. */
  async function countedTotal(predicate: Predicate | undefined, visible: SearchScope): Promise<number> {
    const key = `count:${searchKey(predicate, visible)}`;
    const version = reads.tokenVersion();
    const hit = cache.get<number>(key, version, visible.now);
    if (hit !== undefined) return hit;
    const [row] = await reads.readAll<{ n: number | string }>(searches.count(predicate, visible));
    const total = Number(row?.n ?? 0);
    if (version !== undefined) cache.set(key, version, await nextExpiry(visible.now), total);
    return total;
  }

  const nextExpiry = async (now: string) =>
    (
      await reads.readOne<{ next: string | null }>(
        db
          .selectFrom("tokens")
          .select((eb) => eb.fn.min("expires_at").as("next"))
          .where("expires_at", ">", now)
          .compile(),
      )
    )?.next ?? null;

  /** SQLite: rules that cover every top-level container need no check per token. */
  async function visibleScope(scope: SearchScope): Promise<SearchScope> {
    if (scope.visiblePaths.includes(ROOT)) return scope;
    const key = `tops:${scope.tenantId}`;
    const version = reads.tokenVersion();
    let tops = cache.get<string[]>(key, version, scope.now);
    if (tops === undefined) {
      tops = (await reads.readAll<{ path: string }>(topLevelPaths(scope.tenantId).compile(db))).map(
        (t) => t.path,
      );
      if (version !== undefined) cache.set(key, version, null, tops);
    }
    return coveredScope(scope, tops);
  }

  /** PostgreSQL: the tenant's top-level paths, read with the generation they are valid at. */
  async function readTops(tenantId: string): Promise<{ version: number; value: string[] }> {
    const rows = await reads.readAll<{ path: string | null; generation: string }>(
      topLevelPathsAt(tenantId).compile(db),
    );
    const version = Number(rows[0]!.generation);
    const value = rows.flatMap((row) => (row.path === null ? [] : [row.path]));
    cache.set(`tops:${tenantId}`, version, null, value);
    return { version, value };
  }

  /**
   * A page with the caller's visibility, and the generation it was read at (PostgreSQL). One round trip when the
   * tenant's top-level paths are held: they decide whether the rule check per row can go, and they are checked
   * against the page's own generation afterwards. Held paths older than the page matter only when they dropped the
   * check and the page found rows (without the check a page can only find more, never fewer): then the paths are
   * read again and the page with them.
   */
  async function scopedPage(
    scope: SearchScope,
    statement: (visible: SearchScope) => CompiledQuery,
  ): Promise<{ rows: PageRow[]; visible: SearchScope; version: number | undefined }> {
    if (!stamped) {
      const visible = await visibleScope(scope);
      return { rows: await reads.readArrays<PageRow>(statement(visible)), visible, version: undefined };
    }
    const all = scope.visiblePaths.includes(ROOT);
    let tops = all
      ? undefined
      : (cache.latest<string[]>(`tops:${scope.tenantId}`) ?? (await readTops(scope.tenantId)));
    for (let attempt = 1; ; attempt++) {
      // After two tops that did not match their pages (writes landing in between), the check stays: always right.
      const visible = tops === undefined || attempt > 2 ? scope : coveredScope(scope, tops.value);
      const rows = await reads.readArrays<StampedRow>(statement(visible));
      const version = generationOf(rows);
      const shortcut = visible.visiblePaths !== scope.visiblePaths;
      if (!shortcut || rows.length === 0 || tops?.version === version) {
        return { rows: unstamped(rows), visible, version };
      }
      tops = await readTops(scope.tenantId);
    }
  }

  /**
   * A keyset page (the v2 list and search, wire-format §4.4): the tokens after `after` in result order, and
   * whether more follow (one row more is read to know). No total: a walk by keyset never needs one.
   */
  async function walk(
    what: { readonly query: string } | { readonly predicate: Predicate | undefined },
    scope: SearchScope,
    page: { after: Keyset | undefined; limit: number },
  ): Promise<{ rows: PageRow[]; more: boolean; shape: string }> {
    const { predicate: asked, shape } = "query" in what ? parse(what.query) : { ...what, shape: "" };
    if (scope.conditions?.length === 0) return { rows: [], more: false, shape };
    const predicate = withConditions(asked, scope.conditions);
    const { rows } = await scopedPage(scope, (visible) =>
      searches.after(predicate, visible, page.after, page.limit + 1),
    );
    return { rows: rows.slice(0, page.limit), more: rows.length > page.limit, shape };
  }

  async function search(
    query: string,
    scope: SearchScope,
    page: { offset: number; limit: number },
  ): Promise<{ rows: PageRow[]; total: number; shape: string }> {
    const { predicate: asked, shape } = parse(query);
    if (scope.conditions?.length === 0) return { rows: [], total: 0, shape };
    const predicate = withConditions(asked, scope.conditions);
    const { rows, visible, version } = await scopedPage(scope, (v) =>
      searches.page(predicate, v, page.offset, page.limit),
    );
    // A page that is not full ends the results, so it also tells how many there are.
    if (rows.length < page.limit && (rows.length > 0 || page.offset === 0)) {
      return { rows, total: page.offset + rows.length, shape };
    }
    if (!stamped) return { rows, total: await countedTotal(predicate, visible), shape };
    const key = `count:${searchKey(predicate, visible)}`;
    const hit = cache.get<number>(key, version, scope.now);
    if (hit !== undefined) return { rows, total: hit, shape };
    const [row] = await reads.readAll<{ n: string; generation: string; next: string | null }>(
      searches.count(predicate, visible),
    );
    const total = Number(row!.n);
    cache.set(key, Number(row!.generation), row!.next, total);
    return { rows, total, shape };
  }

  return { search, walk };
}

/** The scope without the rule check per token when the caller's rules cover every top-level path. */
function coveredScope(scope: SearchScope, tops: readonly string[]): SearchScope {
  return coversEverything(scope.visiblePaths, tops) ? { ...scope, visiblePaths: [ROOT] } : scope;
}

export type Search = ReturnType<typeof createSearch>;

/**
 * A session's condition rules ANDed to the query, the query's terms side by side with them so that they can still
 * drive the walk; without conditions (an Application's key), the query alone.
 */
function withConditions(
  asked: Predicate | undefined,
  conditions: readonly (readonly Condition[])[] | undefined,
): Predicate | undefined {
  if (conditions === undefined) return asked;
  const terms = asked === undefined ? [] : asked.kind === "and" ? asked.children : [asked];
  return { kind: "and", children: [...terms, conditionsPredicate(conditions)] };
}
