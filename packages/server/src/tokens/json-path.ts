export type JsonPathSegment = string | number;

export class JsonPathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JsonPathError";
  }
}

const NAME = /[\w-]+/y;
const INDEX = /\[(\d+)\]/y;
const QUOTED = /\[(?:'((?:[^'\\]|\\.)*)'|"((?:[^"\\]|\\.)*)")\]/y;

/**
 * The JSONPath subset of the `json` filter: `$` followed by `.name`, `['name']` (or `["name"]`) and `[index]`.
 * Wildcards, slices, unions, filters and recursive descent are refused, because each can select several values
 * and an expression yields exactly one (spec §4.1). Messages carry offsets only: a path may come from token data.
 */
export function parseJsonPath(path: string): JsonPathSegment[] {
  if (!path.startsWith("$")) throw new JsonPathError("a JSONPath must start with $");
  const segments: JsonPathSegment[] = [];
  let at = 1;
  const match = (pattern: RegExp): RegExpExecArray | null => {
    pattern.lastIndex = at;
    const found = pattern.exec(path);
    if (found) at = pattern.lastIndex;
    return found;
  };
  while (at < path.length) {
    const start = at;
    if (path[at] === ".") {
      at += 1;
      const name = match(NAME);
      if (name) {
        segments.push(name[0]);
        continue;
      }
    } else {
      const index = match(INDEX);
      if (index && Number.isSafeInteger(Number(index[1]))) {
        segments.push(Number(index[1]));
        continue;
      }
      const quoted = match(QUOTED);
      if (quoted) {
        segments.push((quoted[1] ?? quoted[2] ?? "").replace(/\\(.)/g, "$1"));
        continue;
      }
    }
    throw new JsonPathError(
      `unsupported JSONPath at offset ${start}: only $, .name, ['name'] and [index] are allowed`,
    );
  }
  return segments;
}

/** Follows the path through own properties only, so that `__proto__` or `constructor` select nothing. */
export function selectJsonPath(value: unknown, path: readonly JsonPathSegment[]): unknown {
  let current = value;
  for (const segment of path) {
    if (typeof segment === "number") {
      current =
        Array.isArray(current) && segment < current.length ? (current[segment] as unknown) : undefined;
    } else {
      current = isRecord(current) && Object.hasOwn(current, segment) ? current[segment] : undefined;
    }
    if (current === undefined) return undefined;
  }
  return current;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
