import { isPlainObject } from "./shape.js";

export type JsonValue =
  null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };
export type JsonObject = { readonly [key: string]: JsonValue };

export interface JsonLimits {
  /** Nesting of arrays and objects. */
  readonly depth: number;
  /** Values counted over the whole document. */
  readonly nodes: number;
  /** Characters of one string or member name. */
  readonly stringLength: number;
}

/** Generous for a tokenize call (the vault takes at most 1000 values in one), small enough to walk at once. */
export const JSON_LIMITS: JsonLimits = { depth: 32, nodes: 20_000, stringLength: 65_536 };

/**
 * Whether a structured-cloned value is plain JSON within the limits: what `JSON.stringify` writes without loss.
 * `__proto__` as a member name is refused, as the vault's JSON parser refuses it.
 */
export function isJsonValue(value: unknown, limits: JsonLimits = JSON_LIMITS): value is JsonValue {
  const pending: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  let nodes = 0;
  while (pending.length > 0) {
    const { value: current, depth } = pending.pop()!;
    if (++nodes > limits.nodes) return false;
    if (current === null || typeof current === "boolean") continue;
    if (typeof current === "number") {
      if (!Number.isFinite(current)) return false;
      continue;
    }
    if (typeof current === "string") {
      if (current.length > limits.stringLength) return false;
      continue;
    }
    if (depth >= limits.depth) return false;
    if (Array.isArray(current)) {
      if (Object.getPrototypeOf(current) !== Array.prototype) return false;
      for (let index = 0; index < current.length; index++) {
        if (!(index in current)) return false;
        pending.push({ value: current[index], depth: depth + 1 });
      }
      continue;
    }
    if (!isPlainObject(current)) return false;
    for (const key of Object.keys(current)) {
      if (key === "__proto__" || key.length > limits.stringLength) return false;
      pending.push({ value: current[key], depth: depth + 1 });
    }
  }
  return true;
}
