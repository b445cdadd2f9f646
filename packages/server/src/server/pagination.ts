import { Type, type Static, type TSchema } from "typebox";
import type { CursorPage, Page, PageRequest } from "../shared/pages.js";
import { OrNull } from "./schemas.js";

export const MAX_PAGE_SIZE = 100;
export const DEFAULT_PAGE_SIZE = 20;

const PageNumber = Type.Integer({
  minimum: 1,
  maximum: 1_000_000,
  default: 1,
  description: "Page number, from 1.",
});
const PageSize = Type.Integer({
  minimum: 1,
  maximum: MAX_PAGE_SIZE,
  default: DEFAULT_PAGE_SIZE,
  description: `Items per page, 1–${MAX_PAGE_SIZE}.`,
});

/** `page`/`size` as query parameters (lists) or body fields (search); DESIGN §6. */
export const PageParams = { page: Type.Optional(PageNumber), size: Type.Optional(PageSize) };

const Pagination = Type.Object({
  total_items: Type.Integer(),
  page_number: Type.Integer(),
  page_size: Type.Integer(),
  total_pages: Type.Integer(),
});

export function PageOf<T extends TSchema>(item: T) {
  return Type.Object({ pagination: Pagination, data: Type.Array(item) });
}

export function pageRequest(query: { page?: number | null; size?: number | null }): PageRequest {
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

/** `page`/`size` as body fields: null is the default, as absent is. */
export const PageBodyParams = {
  page: Type.Optional(OrNull(PageNumber, "Page number, from 1; absent or null for 1.")),
  size: Type.Optional(
    OrNull(PageSize, `Items per page, 1–${MAX_PAGE_SIZE}; absent or null for ${DEFAULT_PAGE_SIZE}.`),
  ),
};

// Room for the cursor of a token whose id is 400 characters of 4-byte UTF-8, every one escaped in JSON.
const Start = Type.String({
  minLength: 1,
  maxLength: 8192,
  description: "The `pagination.next` of the previous page, unaltered; absent for the first page.",
});

/** `start`/`size` of the keyset walks (wire-format §3), as query parameters (`GET /v2/tokens`). */
export const CursorQueryParams = { start: Type.Optional(Start), size: Type.Optional(PageSize) };

/** The same as body fields (`POST /v2/tokens/search`), where null means absent. */
export const CursorBodyParams = {
  start: Type.Optional(OrNull(Start, "The `pagination.next` of the previous page; absent or null at first.")),
  size: PageBodyParams.size,
};

const CursorPagination = Type.Object({
  page_size: Type.Integer(),
  next: Type.Union([Type.String(), Type.Null()], {
    description: "The cursor of the next page (send it as `start`); null on the last page.",
  }),
});

export function CursorPageOf<T extends TSchema>(item: T) {
  return Type.Object({ pagination: CursorPagination, data: Type.Array(item) });
}

/** A keyset page in the wire shape (wire-format §3); SDKs stop when `next` is null. */
export function presentCursorPage<T, W>(
  page: CursorPage<T>,
  present: (item: T) => W,
): { pagination: Static<typeof CursorPagination>; data: W[] } {
  return {
    pagination: { page_size: page.size, next: page.next ?? null },
    data: page.items.map((item) => present(item)),
  };
}
