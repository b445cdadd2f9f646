import type { Condition } from "../access/rules.js";
import { ROOT } from "../access/decide.js";
import type { Executor, Reads } from "../storage/database.js";
import type { TokensTable } from "../storage/schema.js";
import {
  searchStatements,
  topLevelPaths,
  type Keyset,
  type PAGE_COLUMNS,
  type SearchScope,
} from "./compile.js";
import { parseQuery } from "./parser.js";
import { conditionsPredicate, toPredicate, type Predicate, type PredicateOptions } from "./predicate.js";
import { coversEverything, searchKey } from "./scope.js";
import { queryShape } from "./shape.js";

/** A row of a search page: the columns of PAGE_COLUMNS, in that order (tokens/store.ts reads it as a token). */
export type PageRow = ColumnsOf<typeof PAGE_COLUMNS>;
type ColumnsOf<T extends readonly (keyof TokensTable)[]> = {
  readonly [I in keyof T]: T[I] extends keyof TokensTable ? TokensTable[T[I]] : never;
};

const SEARCH_CACHE_SIZE = 500;

/**
 * Results derived from the whole index — search totals, a tenant's top-level containers — kept while no token has
 * been written (the token generation, which every token write by any connection moves, migration 0008) and, for totals,
 * while no counted token has expired since (`until`: the earliest expiry still ahead when it was counted). Exact,
 * not merely recent: paging through a large result counts it once, not once per page. PostgreSQL has no such
 * version number, so there everything is computed each time.
 */
function searchCache(reads: Reads) {
  const cache = new Map<string, { version: number; until: string | null; value: unknown }>();
  return async <T>(
    key: string,
    now: string,
    compute: () => Promise<{ value: T; until: string | null }>,
  ): Promise<T> => {
    // Read before computing: a commit landing in between leaves this entry looking stale, never being stale.
    const version = reads.tokenVersion();
    if (version === undefined) return (await compute()).value;
    const hit = cache.get(key);
    if (hit !== undefined && hit.version === version && (hit.until === null || now < hit.until)) {
      return hit.value as T;
    }
    const { value, until } = await compute();
    cache.delete(key);
    if (cache.size >= SEARCH_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    cache.set(key, { version, until, value });
    return value;
  };
}

/**
 * The one way into search (spec §4.1; `search` by offset, `walk` by keyset): the query parsed and checked (a QueryError names its place), its
 * predicate planned and compiled to one statement for the page and one for the total, both holding the
 * caller's visibility so that pages are full and totals exact, run on the store's read paths, the total kept
 * in the count cache. Answers the page's rows, the total, and the query's shape for the audit log (no values).
 */
export function createSearch(db: Executor, reads: Reads, types: PredicateOptions["types"]) {
  const cached = searchCache(reads);
  const searches = searchStatements(db);
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

  /** Rules that cover every top-level container need no check per token. */
  async function visibleScope(scope: SearchScope): Promise<SearchScope> {
    const tops = scope.visiblePaths.includes(ROOT)
      ? []
      : await cached(`tops:${scope.tenantId}`, scope.now, async () => ({
          value: (await reads.readAll<{ path: string }>(topLevelPaths(scope.tenantId).compile(db))).map(
            (t) => t.path,
          ),
          until: null,
        }));
    return {
      ...scope,
      visiblePaths: coversEverything(scope.visiblePaths, tops) ? [ROOT] : scope.visiblePaths,
    };
  }

  const parse = (query: string) => {
    const tree = parseQuery(query);
    return { predicate: tree && toPredicate(tree, { types }), shape: queryShape(tree) };
  };

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
    const visible = await visibleScope(scope);
    const rows = await reads.readArrays<PageRow>(
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
    const visible = await visibleScope(scope);
    const rows = await reads.readArrays<PageRow>(searches.page(predicate, visible, page.offset, page.limit));
    // A page that is not full ends the results, so it also tells how many there are.
    const total =
      rows.length < page.limit && (rows.length > 0 || page.offset === 0)
        ? page.offset + rows.length
        : await cached(`count:${searchKey(predicate, visible)}`, scope.now, async () => {
            const [row] = await reads.readAll<{ n: number | string }>(searches.count(predicate, visible));
            return { value: Number(row?.n ?? 0), until: await nextExpiry(scope.now) };
          });
    return { rows, total, shape };
  }

  return { search, walk };
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
