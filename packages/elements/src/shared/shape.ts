/**
 * Strict shape checks for everything that crosses a frame boundary. A message is structured-cloned, so it can be
 * any cloneable value (a Map, a Date, an object with extra members, a getter-free copy of a prototype chain): a
 * check accepts only plain objects with exactly the named members, arrays, and primitives within bounds, and
 * everything else is ignored by the caller. Written here rather than taken from a schema library because the
 * whole frame protocol must stay small enough to read in one sitting.
 */

export type Check<T> = (value: unknown) => value is T;
export type Checked<C> = C extends Check<infer T> ? T : never;

type Shape = Readonly<Record<string, Check<unknown>>>;
type Required<S extends Shape> = { readonly [K in keyof S]: Checked<S[K]> };
type Optional<S extends Shape> = { readonly [K in keyof S]?: Checked<S[K]> };

/** An object made by a literal or `JSON.parse` (or its structured clone), never a class instance or a proxy. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/** A plain object with exactly the `required` members and any of the `optional` ones, each of its shape. */
export function object<R extends Shape, O extends Shape = Record<never, never>>(
  required: R,
  optional?: O,
): Check<Required<R> & Optional<O>> {
  const known = new Set([...Object.keys(required), ...Object.keys(optional ?? {})]);
  return (value): value is Required<R> & Optional<O> => {
    if (!isPlainObject(value)) return false;
    for (const key of Object.keys(value)) if (!known.has(key)) return false;
    for (const [key, check] of Object.entries(required)) {
      if (!Object.hasOwn(value, key) || !check(value[key])) return false;
    }
    for (const [key, check] of Object.entries(optional ?? {})) {
      if (Object.hasOwn(value, key) && value[key] !== undefined && !check(value[key])) return false;
    }
    return true;
  };
}

export function string(options: { min?: number; max: number; pattern?: RegExp }): Check<string> {
  const { min = 0, max, pattern } = options;
  return (value): value is string =>
    typeof value === "string" &&
    value.length >= min &&
    value.length <= max &&
    (pattern === undefined || pattern.test(value));
}

export function integer(min: number, max: number): Check<number> {
  return (value): value is number =>
    Number.isSafeInteger(value) && (value as number) >= min && (value as number) <= max;
}

export const boolean: Check<boolean> = (value): value is boolean => typeof value === "boolean";

export function literal<const T extends readonly (string | number | boolean)[]>(
  ...values: T
): Check<T[number]> {
  return (value): value is T[number] => values.includes(value as T[number]);
}

export function array<T>(item: Check<T>, max: number, min = 0): Check<readonly T[]> {
  return (value): value is readonly T[] => {
    if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype) return false;
    if (value.length < min || value.length > max) return false;
    // By index, not `every`, which skips the holes of a sparse array.
    for (let index = 0; index < value.length; index++) if (!item(value[index])) return false;
    return true;
  };
}

export function oneOf<const C extends readonly Check<unknown>[]>(...checks: C): Check<Checked<C[number]>> {
  return (value): value is Checked<C[number]> => checks.some((check) => check(value));
}

/** Member names that reach an object's prototype when assigned, refused wherever a message names a member. */
export const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);
