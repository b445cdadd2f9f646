/**
 * The CLI reads and writes the HTTP API's JSON (snake_case): request files, import lines and `--json` output are
 * exactly what docs/tokens.md and curl show, so they move between the two unchanged. The SDK speaks camelCase;
 * this is the one place the CLI converts between them.
 *
 * As in the SDK, the values of a token's `data`, `metadata` and `mask`, and of a reactor's `configuration`, belong to
 * the caller and are never renamed, and a leading underscore is kept (`_extras`).
 */

/** The keys of a token whose values are the caller's. */
export const TOKEN_USER_DATA: ReadonlySet<string> = new Set(["data", "metadata", "mask"]);

/** The keys of a reactor whose values are the caller's: configuration names are kept as written. */
export const REACTOR_USER_DATA: ReadonlySet<string> = new Set(["configuration"]);

const NONE: ReadonlySet<string> = new Set();

/** A request body in API form → the SDK's input. The cast is the server's to check: it validates every field. */
export function fromApiJson<T>(value: unknown, verbatim: ReadonlySet<string> = NONE): T {
  return rename(
    value,
    (key) => key.replace(/(?!^)_([a-z0-9])/g, (_, c: string) => c.toUpperCase()),
    verbatim,
  ) as T;
}

/** An SDK result → the resource as the API returns it. */
export function toApiJson(value: unknown, verbatim: ReadonlySet<string> = NONE): unknown {
  return rename(value, (key) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), verbatim);
}

function rename(value: unknown, key: (name: string) => string, verbatim: ReadonlySet<string>): unknown {
  if (Array.isArray(value)) return value.map((item: unknown) => rename(item, key, verbatim));
  if (typeof value !== "object" || value === null) return value;
  const renamed: Record<string, unknown> = {};
  for (const [name, inner] of Object.entries(value)) {
    // defineProperty: a key named `__proto__` in a request file stays a key instead of replacing the prototype.
    Object.defineProperty(renamed, key(name), {
      value: verbatim.has(name) ? inner : rename(inner, key, NONE),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return renamed;
}
