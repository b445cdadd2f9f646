import type { Page, Pagination, Token } from "./types.js";

/**
 * snake_case on the wire, camelCase in the SDK: every key is renamed here and nowhere else (STYLE §13), at run
 * time by the functions below and at the type level by {@link Camelize}, which the public types are built with.
 *
 * Keys are renamed recursively through plain objects and arrays. The exception is user data: the values of a
 * token's `data`, `metadata` and `mask` (whose keys name fields of the data), and of a reactor's `configuration`,
 * belong to the caller and must reach the server, and come back, byte for byte. Those key names are passed as `verbatim`, and their values are then
 * copied untouched. `verbatim` applies at the top level of the resource being converted (or of each resource in
 * an array), where user data sits, so that a page envelope's own `data` array (see {@link pageFromWire}) is not
 * mistaken for it. A leading underscore is kept (`_extras`), so that such keys stay apart from ordinary ones.
 */

/** `tenant_id` → `tenantId`, at the type level; a leading underscore stays, as at run time. */
export type CamelCase<S extends string> = S extends `_${infer Rest}`
  ? `_${CamelCaseTail<Rest>}`
  : CamelCaseTail<S>;
type CamelCaseTail<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Head}${Capitalize<CamelCaseTail<Tail>>}`
  : S;

/** A wire type in SDK spelling: keys renamed recursively, the values of the `Verbatim` keys left as they are. */
export type Camelize<T, Verbatim extends string = never> = T extends readonly (infer Item)[]
  ? Camelize<Item, Verbatim>[]
  : T extends object
    ? { [K in keyof T as K extends string ? CamelCase<K> : K]: K extends Verbatim ? T[K] : Camelize<T[K]> }
    : T;

/** The keys of a token whose values are the caller's, never renamed. */
export const TOKEN_USER_DATA: ReadonlySet<string> = new Set(["data", "metadata", "mask"]);
export type TokenUserData = "data" | "metadata" | "mask";

/** A reactor's configuration names are the caller's, like a token's metadata keys. */
export const REACTOR_USER_DATA: ReadonlySet<string> = new Set(["configuration"]);
export type ReactorUserData = "configuration";

type Rename = (key: string) => string;

const NONE: ReadonlySet<string> = new Set();

export function camelCase(key: string): string {
  return key.replace(/(?!^)_([a-z0-9])/g, (_, letter: string) => letter.toUpperCase());
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

/**
 * A tokenize body in wire form. The server reads any object with a string `type` as a token request (its own
 * keys renamed, its user data not); every other object or array is the caller's own structure, walked with its
 * keys untouched.
 */
export function tokenizeToWire(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(tokenizeToWire);
  if (!isPlainObject(value)) return value;
  if (isTokenRequest(value)) return toWire(value, TOKEN_USER_DATA);
  const walked: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) walked[key] = tokenizeToWire(inner);
  return walked;
}

/**
 * A tokenize response in SDK form. The response has the request's shape, so the request (as the caller gave it)
 * says where the created tokens are: in place of each token request, a token to convert; everywhere else ids,
 * nulls and the caller's own keys, kept as they are.
 */
export function tokenizedFromWire(request: unknown, response: unknown): unknown {
  if (Array.isArray(request) && Array.isArray(response)) {
    return response.map((item: unknown, index) => tokenizedFromWire(request[index], item));
  }
  if (!isPlainObject(request) || !isPlainObject(response)) return response;
  if (isTokenRequest(request)) return fromWire<Token>(response, TOKEN_USER_DATA);
  const walked: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(response)) walked[key] = tokenizedFromWire(request[key], inner);
  return walked;
}

function isTokenRequest(value: Record<string, unknown>): boolean {
  return typeof value.type === "string";
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
