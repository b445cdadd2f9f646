import { Type, type TSchema } from "typebox";

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

export interface PageRequest {
  readonly page: number;
  readonly size: number;
}

export interface Page<T> {
  pagination: { total_items: number; page_number: number; page_size: number; total_pages: number };
  data: T[];
}

export function pageRequest(query: { page?: number; size?: number }): PageRequest {
  return { page: query.page ?? 1, size: query.size ?? DEFAULT_PAGE_SIZE };
}

export function offsetOf(request: PageRequest): number {
  return (request.page - 1) * request.size;
}

/** A page past the end is an empty page, not an error: SDK auto-pagers stop on `data: []` (wire-format §3). */
export function toPage<T>(data: T[], totalItems: number, request: PageRequest): Page<T> {
  return {
    pagination: {
      total_items: totalItems,
      page_number: request.page,
      page_size: request.size,
      total_pages: Math.ceil(totalItems / request.size),
    },
    data,
  };
}
