import { Type, type Static, type TSchema } from "typebox";
import type { Page, PageRequest } from "../shared/pages.js";

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

/** `page`/`size` as query parameters (lists) or body fields (search); DESIGN §6. */
export const PageParams = {
  page: Type.Optional(
    Type.Integer({ minimum: 1, maximum: 1_000_000, default: 1, description: "Page number, from 1." }),
  ),
  size: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_PAGE_SIZE,
      default: DEFAULT_PAGE_SIZE,
      description: `Items per page, 1–${MAX_PAGE_SIZE}.`,
    }),
  ),
};

const Pagination = Type.Object({
  total_items: Type.Integer(),
  page_number: Type.Integer(),
  page_size: Type.Integer(),
  total_pages: Type.Integer(),
});

export function PageOf<T extends TSchema>(item: T) {
  return Type.Object({ pagination: Pagination, data: Type.Array(item) });
}

export function pageRequest(query: { page?: number; size?: number }): PageRequest {
  return { page: query.page ?? 1, size: query.size ?? DEFAULT_PAGE_SIZE };
}

/**
 * A service's page in the wire shape (wire-format §3), each item through its resource's presenter. A page past
 * the end is an empty page, not an error: SDK auto-pagers stop on `data: []`.
 */
export function presentPage<T, W>(
  page: Page<T>,
  present: (item: T) => W,
): { pagination: Static<typeof Pagination>; data: W[] } {
  return {
    pagination: {
      total_items: page.total,
      page_number: page.request.page,
      page_size: page.request.size,
      total_pages: Math.ceil(page.total / page.request.size),
    },
    data: page.items.map((item) => present(item)),
  };
}
