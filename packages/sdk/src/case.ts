import type { Page, Pagination } from "./types.js";

/**
 * snake_case on the wire, camelCase in the SDK: every key is renamed here and nowhere else (STYLE §13).
 *
 * Keys are renamed recursively through plain objects and arrays. The exception is user data: the values of
 * `data` and `metadata` (tokens), `configuration` (reactors) and `args` (reactor invocations) belong to the caller
 * and must reach the server, and come back, byte for byte. No endpoint the SDK covers today carries them; the
 * resources that do will pass those key names as `verbatim`, and their values are then copied untouched.
 * `verbatim` applies at the top level of the resource being converted (or of each resource in an array), where
 * user data sits, so that a page envelope's own `data` array (see {@link pageFromWire}) is not mistaken for it.
 */

type Rename = (key: string) => string;

const NONE: ReadonlySet<string> = new Set();

export function camelCase(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());
}

export function snakeCase(key: string): string {
  return key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/** A response body (or part of one) in SDK form. The cast is the SDK's trust in the server's response schema. */
export function fromWire<T>(value: unknown, verbatim: ReadonlySet<string> = NONE): T {
  return renameKeys(value, camelCase, verbatim) as T;
}

/** A request body in wire form. `Date` values are left alone; `JSON.stringify` writes them as ISO strings. */
export function toWire(value: unknown, verbatim: ReadonlySet<string> = NONE): unknown {
  return renameKeys(value, snakeCase, verbatim);
}

/** A page envelope `{pagination, data: [...]}`: the envelope's keys, then each item as a resource of its own. */
export function pageFromWire<T>(value: unknown, verbatim: ReadonlySet<string> = NONE): Page<T> {
  const { pagination, data } = value as { pagination: unknown; data: unknown[] };
  return {
    pagination: fromWire<Pagination>(pagination),
    data: data.map((item) => fromWire<T>(item, verbatim)),
  };
}

function renameKeys(value: unknown, rename: Rename, verbatim: ReadonlySet<string>): unknown {
  if (Array.isArray(value)) return value.map((item) => renameKeys(item, rename, verbatim));
  if (!isPlainObject(value)) return value;
  const renamed: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    renamed[rename(key)] = verbatim.has(key) ? inner : renameKeys(inner, rename, NONE);
  }
  return renamed;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}
