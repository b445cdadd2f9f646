import type { Page } from "./types.js";

/**
 * Every item of every page, in order, fetching a page only when the caller has consumed the one before: a
 * caller that stops early (`break`) sends no further request. It ends after the last page the server reports,
 * or at an empty page. Items created or deleted while it runs may shift the pages (offset paging), so an item
 * can then be seen twice or not at all.
 */
export async function* itemsOfEveryPage<T>(
  fetchPage: (page: number) => Promise<Page<T>>,
): AsyncGenerator<T, void> {
  for (let page = 1; ; page++) {
    const { pagination, data } = await fetchPage(page);
    yield* data;
    if (data.length === 0 || page >= pagination.totalPages) return;
  }
}

/** `page` and `size` as the query parameters of a list call. */
export function appendPage(query: URLSearchParams, input: { page?: number; size?: number }): void {
  if (input.page !== undefined) query.set("page", String(input.page));
  if (input.size !== undefined) query.set("size", String(input.size));
}
