/** A page asked for: its number, from 1, and its size (DESIGN §6). */
export interface PageRequest {
  readonly page: number;
  readonly size: number;
}

/**
 * One page of a list as services return it: its items, how many there are in all, and what was asked. The wire
 * shape (`pagination`, `data`) is the route layer's (server/pagination.ts).
 */
export interface Page<T> {
  readonly items: readonly T[];
  readonly total: number;
  readonly request: PageRequest;
}

export function offsetOf(request: PageRequest): number {
  return (request.page - 1) * request.size;
}

export function pageOf<T>(items: readonly T[], total: number, request: PageRequest): Page<T> {
  return { items, total, request };
}

/**
 * One page of a keyset walk (the v2 list and search): its items, the size asked for, and the opaque cursor of
 * the next page, absent on the last one.
 */
export interface CursorPage<T> {
  readonly items: readonly T[];
  readonly size: number;
  readonly next: string | undefined;
}

/** A keyset page asked for: the cursor it starts after (none for the first), and its size. */
export interface CursorRequest {
  readonly start?: string;
  readonly size: number;
}
