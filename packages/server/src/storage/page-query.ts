import type { SelectQueryBuilder } from "kysely";

/**
 * One page of a filtered list and how many rows the filter matches in all, the two statements run at once from
 * the same filtered query: the filter is written once, so the page and its total cannot disagree. `ordered`
 * selects the page's columns and orders them (the order must end on a unique column, so that pages are stable).
 */
export async function pageAndCount<DB, TB extends keyof DB, Row>(
  filtered: SelectQueryBuilder<DB, TB, object>,
  ordered: (query: SelectQueryBuilder<DB, TB, object>) => SelectQueryBuilder<DB, TB, Row>,
  page: { readonly offset: number; readonly limit: number },
): Promise<{ rows: Row[]; total: number }> {
  const [rows, count] = await Promise.all([
    ordered(filtered).limit(page.limit).offset(page.offset).execute(),
    // Generic over the table, Kysely cannot name the selection: it is the one aggregate selected.
    filtered.select((eb) => eb.fn.countAll().as("n")).executeTakeFirstOrThrow() as Promise<{
      n: string | number | bigint;
    }>,
  ]);
  return { rows, total: Number(count.n) };
}
