import fc from "fast-check";

/*
 * Shared pieces of the property-based HTTP fuzz tests (applications/fuzz.test.ts, tokens/fuzz.test.ts): the
 * response oracle, request plumbing, and generators of odd strings, values, JSON mutations, query strings,
 * path ids, API keys and headers. Endpoint-specific constants (valid bodies, field names) stay in each test.
 * TESSERA_FUZZ_RUNS and TESSERA_FUZZ_SEED reproduce a run.
 */

export const NUM_RUNS = Number(process.env.TESSERA_FUZZ_RUNS ?? 150);
const SEED = process.env.TESSERA_FUZZ_SEED === undefined ? undefined : Number(process.env.TESSERA_FUZZ_SEED);
export const RUN_PARAMETERS = { numRuns: NUM_RUNS, ...(SEED !== undefined && { seed: SEED }) };
export const PROPERTY_TIMEOUT_MS = 180_000;
export const REQUEST_TIMEOUT_MS = 10_000;

// ---------------------------------------------------------------------------------------------------------------
// The oracle

export interface Observed {
  readonly status: number;
  readonly contentType: string | null;
  readonly text: string;
}

/** Everything wrong with a response to a fuzzed request; empty when it honours the contract. */
export function violations(response: Observed): string[] {
  const found: string[] = [];
  const { status, contentType, text } = response;
  if (status >= 500) found.push(`status ${status} is a server error`);
  if (status < 200 || status >= 600) found.push(`status ${status} is not a final answer`);
  if (status >= 200 && status < 300) {
    if (status !== 204 && !parses(text)) found.push("a 2xx body is not JSON");
    return found;
  }
  if (status < 400) return found;
  if (!/^application\/problem\+json/.test(contentType ?? "")) {
    found.push(`content-type is ${contentType ?? "(none)"}, not application/problem+json`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    found.push("the body is not JSON");
    return found;
  }
  if (!isObject(body)) {
    found.push("the body is not a JSON object");
    return found;
  }
  if (typeof body.type !== "string" || !body.type.startsWith("urn:tessera:problem:")) {
    found.push("type is not a urn:tessera:problem: string");
  }
  if (typeof body.title !== "string") found.push("title is not a string");
  if (body.status !== status)
    found.push(`status in the body (${String(body.status)}) is not the HTTP status`);
  if ("errors" in body) {
    const errors = body.errors;
    const wellFormed =
      isObject(errors) &&
      Object.values(errors).every((list) => Array.isArray(list) && list.every((m) => typeof m === "string"));
    if (!wellFormed) found.push("errors is not an object of string arrays");
  }
  return found;
}

export function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------------------------
// Requests

export interface FuzzRequest {
  readonly method: string;
  /** Path and query string, exactly as appended to the server's URL. */
  readonly target: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body?: string | Uint8Array;
}

export function preview(value: string, max = 600): string {
  const shown = JSON.stringify(value.length > max ? value.slice(0, max) : value);
  return value.length > max ? `${shown}…(${value.length} chars)` : shown;
}

export function describeRequest(request: FuzzRequest): string {
  const headers = request.headers.map(([name, value]) => `  ${name}: ${preview(value, 120)}`).join("\n");
  let body = "(none)";
  if (typeof request.body === "string") body = preview(request.body);
  else if (request.body !== undefined)
    body = `bytes ${Buffer.from(request.body).toString("hex").slice(0, 600)}`;
  return `${request.method} ${preview(request.target, 300)}\n${headers}\n  body: ${body}`;
}

/** Counterexamples print as a readable request rather than a huge object. */
export function fuzzRequest<R extends FuzzRequest>(request: R): R {
  return Object.assign({}, request, { [fc.toStringMethod]: () => describeRequest(request) });
}

export async function perform(baseUrl: string, request: FuzzRequest): Promise<Observed> {
  // Bytes, never a string: fetch would label a string body text/plain when the request carries no content type.
  const body = typeof request.body === "string" ? new TextEncoder().encode(request.body) : request.body;
  const response = await fetch(baseUrl + request.target, {
    method: request.method,
    headers: request.headers.map(([name, value]) => [name, value]),
    body,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  return {
    status: response.status,
    contentType: response.headers.get("content-type"),
    text: await response.text(),
  };
}

/**
 * Sends one fuzzed request and throws, with the request and the answer, when the answer breaks the contract
 * (`violations`) or whatever `extra` finds wrong with it. Returns the answer otherwise.
 */
export async function checkRequest<R extends FuzzRequest>(
  baseUrl: string,
  request: R,
  extra?: (request: R, response: Observed) => string[],
): Promise<Observed> {
  let response: Observed;
  try {
    response = await perform(baseUrl, request);
  } catch (error) {
    throw new Error(`no answer (${String(error)})\n${describeRequest(request)}`, { cause: error });
  }
  const found = [...violations(response), ...(extra?.(request, response) ?? [])];
  if (found.length > 0) {
    const answer = `${response.status} ${response.contentType ?? ""} ${preview(response.text, 1000)}`;
    throw new Error(`${found.join("; ")}\n${describeRequest(request)}\n→ ${answer}`);
  }
  return response;
}

// ---------------------------------------------------------------------------------------------------------------
// Strings and values

export const printableChar = fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code));
export const printable = (maxLength = 40) => fc.string({ unit: printableChar, maxLength });
export const loneSurrogate = fc
  .integer({ min: 0xd800, max: 0xdfff })
  .map((code) => String.fromCharCode(code));
export const controlChar = fc
  .oneof(fc.constant(0), fc.integer({ min: 1, max: 0x1f }), fc.constant(0x7f))
  .map((code) => String.fromCharCode(code));
/** Mostly printable, with control characters (NUL included), lone surrogates and any code point mixed in. */
export const weirdChar = fc.oneof(
  { weight: 6, arbitrary: printableChar },
  { weight: 2, arbitrary: controlChar },
  { weight: 1, arbitrary: loneSurrogate },
  { weight: 2, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
);

export const hugeString = fc
  .constantFrom(201, 401, 1001, 65_536, 1_100_000)
  .chain((length) => printableChar.map((c) => c.repeat(length)));

/** Odd strings: the endpoint's `specials` (field values, near misses), binary, graphemes, control characters. */
export function weirdStringOf(specials: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...specials) },
    { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 30 }) },
    { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 30 }) },
    { weight: 3, arbitrary: fc.string({ unit: weirdChar, maxLength: 20 }) },
    { weight: 1, arbitrary: hugeString },
  );
}

/** Any JSON value, oddly: the endpoint's `constants`, odd strings, numbers at the edges, random JSON. */
export function weirdValueOf(
  weirdString: fc.Arbitrary<string>,
  constants: readonly unknown[],
): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom<unknown>(...constants) },
    { weight: 3, arbitrary: weirdString },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
    { weight: 1, arbitrary: fc.integer() },
    { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  );
}

/** JSON text that JSON.stringify cannot produce, followed by the endpoint's own (duplicate members, …). */
export function rawJsonTextOf(specific: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(
      "1e400",
      "-1e400",
      "-0",
      "1.0",
      "1E0",
      "0.1e-400",
      "123456789012345678901234567890",
      "1.0000000000000001",
      '"\\u0000"',
      '"\\ud800"',
      '"\\udfff\\ud800"',
      ...specific,
    ),
    fc
      .tuple(fc.constantFrom(10, 1_000, 100_000), fc.boolean())
      .map(([depth, array]) =>
        array ? "[".repeat(depth) + "]".repeat(depth) : '{"a":'.repeat(depth) + "1" + "}".repeat(depth),
      ),
  );
}

/** Member names: the endpoint's field names and traps, or any short string. */
export function keyNameOf(names: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 12 }));
}

/** `value` in `weight` out of `outOf` cases, `null` otherwise. */
export function sometimes<T>(value: fc.Arbitrary<T>, weight: number, outOf: number): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: outOf - weight, arbitrary: fc.constant(null) }, { weight, arbitrary: value });
}

// ---------------------------------------------------------------------------------------------------------------
// Mutating valid JSON bodies

export type Mutation =
  | { readonly kind: "delete"; readonly at: number }
  | { readonly kind: "replace"; readonly at: number; readonly value: unknown }
  | { readonly kind: "string"; readonly at: number; readonly value: string }
  | { readonly kind: "rename"; readonly at: number; readonly key: string }
  | { readonly kind: "raw"; readonly at: number; readonly text: string }
  | { readonly kind: "add"; readonly at: number; readonly key: string; readonly value: unknown }
  | { readonly kind: "wrap"; readonly at: number; readonly depth: number; readonly inArray: boolean }
  | { readonly kind: "repeat"; readonly at: number; readonly times: number };

export interface MutationParts {
  readonly weirdValue: fc.Arbitrary<unknown>;
  readonly weirdString: fc.Arbitrary<string>;
  readonly keyName: fc.Arbitrary<string>;
  readonly rawJsonText: fc.Arbitrary<string>;
}

export function mutationOf({
  weirdValue,
  weirdString,
  keyName,
  rawJsonText,
}: MutationParts): fc.Arbitrary<Mutation> {
  const at = fc.nat();
  return fc.oneof(
    fc.record({ kind: fc.constant("delete" as const), at }),
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("replace" as const), at, value: weirdValue }) },
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("string" as const), at, value: weirdString }) },
    fc.record({ kind: fc.constant("rename" as const), at, key: keyName }),
    fc.record({ kind: fc.constant("raw" as const), at, text: rawJsonText }),
    fc.record({ kind: fc.constant("add" as const), at, key: keyName, value: weirdValue }),
    fc.record({
      kind: fc.constant("wrap" as const),
      at,
      depth: fc.integer({ min: 1, max: 30 }),
      inArray: fc.boolean(),
    }),
    fc.record({ kind: fc.constant("repeat" as const), at, times: fc.integer({ min: 1, max: 150 }) }),
  );
}

export type TextMutation =
  | { readonly kind: "duplicate-key"; readonly key: string; readonly value: string; readonly first: boolean }
  | { readonly kind: "truncate"; readonly at: number }
  | { readonly kind: "wrap"; readonly prefix: string; readonly suffix: string };

export function textMutationOf(
  keyName: fc.Arbitrary<string>,
  weirdValue: fc.Arbitrary<unknown>,
): fc.Arbitrary<TextMutation> {
  return fc.oneof(
    fc.record({
      kind: fc.constant("duplicate-key" as const),
      key: keyName,
      value: weirdValue.map((v) => JSON.stringify(v) ?? "null"),
      first: fc.boolean(),
    }),
    fc.record({ kind: fc.constant("truncate" as const), at: fc.nat() }),
    fc.record({
      kind: fc.constant("wrap" as const),
      prefix: fc.constantFrom("", " ", "\ufeff", "\n\n", "[", "x", "//c\n"),
      suffix: fc.constantFrom("", " ", "\n", "]", ",", "}", "x", "\u0000"),
    }),
  );
}

export type Path = (string | number)[];

export function pathsOf(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((item, i) => pathsOf(item, [...prefix, i], out));
  else if (isObject(value))
    for (const [key, item] of Object.entries(value)) pathsOf(item, [...prefix, key], out);
  return out;
}

export function getAt(root: unknown, path: Path): unknown {
  let value = root;
  for (const step of path) value = (value as Record<string | number, unknown>)[step];
  return value;
}

/** Sets an own property even for "__proto__", which plain assignment would turn into a prototype change. */
export function define(target: object, key: string | number, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

export function setAt(root: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  define(getAt(root, path.slice(0, -1)) as object, path[path.length - 1]!, value);
  return root;
}

export function applyMutations(valid: unknown, mutations: readonly Mutation[], raws: string[]): unknown {
  let root: unknown = structuredClone(valid);
  for (const m of mutations) {
    if (root === undefined) root = {};
    let paths = pathsOf(root);
    // A string mutation aims at a string in the body (a name, a container, a permission) when there is one.
    if (m.kind === "string") {
      const strings = paths.filter((p) => typeof getAt(root, p) === "string");
      if (strings.length > 0) paths = strings;
    } else if (m.kind === "rename") {
      const members = paths.filter((p) => typeof p[p.length - 1] === "string");
      if (members.length > 0) paths = members;
    }
    const path = paths[m.at % paths.length]!;
    const target = getAt(root, path);
    switch (m.kind) {
      case "delete": {
        if (path.length === 0) {
          root = undefined;
          break;
        }
        const parent = getAt(root, path.slice(0, -1));
        const last = path[path.length - 1]!;
        if (Array.isArray(parent)) parent.splice(Number(last), 1);
        else delete (parent as Record<string, unknown>)[last];
        break;
      }
      case "replace":
        root = setAt(root, path, structuredClone(m.value));
        break;
      case "string":
        root = setAt(root, path, m.value);
        break;
      case "rename": {
        const parent = getAt(root, path.slice(0, -1));
        const last = path[path.length - 1];
        if (!isObject(parent) || typeof last !== "string") break;
        delete parent[last];
        define(parent, m.key, target);
        break;
      }
      case "raw":
        raws.push(m.text);
        root = setAt(root, path, `@@raw${raws.length - 1}@@`);
        break;
      case "add":
        if (Array.isArray(target)) target.push(structuredClone(m.value));
        else if (isObject(target)) define(target, m.key, structuredClone(m.value));
        else root = setAt(root, path, { [m.key]: structuredClone(m.value) });
        break;
      case "wrap": {
        let wrapped = target;
        for (let i = 0; i < m.depth; i++) wrapped = m.inArray ? [wrapped] : { value: wrapped };
        root = setAt(root, path, wrapped);
        break;
      }
      case "repeat": {
        // Past a maxItems, but not a huge string a hundred times over: the body limit is tested elsewhere.
        const times = (JSON.stringify(target)?.length ?? 0) > 10_000 ? 2 : m.times;
        root = setAt(
          root,
          path,
          Array.from({ length: times }, () => structuredClone(target)),
        );
        break;
      }
    }
  }
  return root;
}

export function applyTextMutation(text: string, m: TextMutation): string {
  switch (m.kind) {
    case "duplicate-key": {
      if (!text.startsWith("{")) return text;
      const member = `${JSON.stringify(m.key)}:${m.value}`;
      if (text === "{}") return `{${member}}`;
      return m.first ? `{${member},${text.slice(1)}` : `${text.slice(0, -1)},${member}}`;
    }
    case "truncate":
      return text.slice(0, m.at % (text.length + 1));
    case "wrap":
      return m.prefix + text + m.suffix;
  }
}

/** JSON text of `mutations` applied to `valid`, with raw JSON spliced in for the markers a "raw" mutation left. */
export function mutatedJson(
  valid: unknown,
  mutations: readonly Mutation[],
  text: TextMutation | null,
): string {
  const raws: string[] = [];
  const mutated = applyMutations(valid, mutations, raws);
  let json = JSON.stringify(mutated) ?? "";
  raws.forEach((raw, i) => {
    json = json.replace(`"@@raw${i}@@"`, () => raw);
  });
  return text === null ? json : applyTextMutation(json, text);
}

/** Valid bodies, mostly mutated once (so the rest stays valid and the mutated part reaches the service). */
export function mutatedBodyTextOf(
  valid: fc.Arbitrary<unknown>,
  mutation: fc.Arbitrary<Mutation>,
  textMutation: fc.Arbitrary<TextMutation>,
): fc.Arbitrary<string> {
  return fc
    .record({
      valid,
      mutations: fc.oneof(
        { weight: 3, arbitrary: mutation.map((m) => [m]) },
        { weight: 1, arbitrary: fc.array(mutation, { minLength: 2, maxLength: 4 }) },
      ),
      text: sometimes(textMutation, 1, 4),
    })
    .map(({ valid, mutations, text }) => mutatedJson(valid, mutations, text));
}

export const randomJsonText = fc.oneof(
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.anything({ maxDepth: 3 }).map((v) => {
    try {
      return JSON.stringify(v) ?? "";
    } catch {
      return "";
    }
  }),
);

// ---------------------------------------------------------------------------------------------------------------
// Content types, query strings, path ids

export const CONTENT_TYPES = [
  "application/json; charset=utf-8",
  "application/json;charset=UTF-8",
  "application/json; charset=latin1",
  "application/json; charset=utf-16",
  'application/json; charset="utf-8"',
  "APPLICATION/JSON",
  "application/json ;",
  "application/json;;;",
  "application/json, text/plain",
  "application/json; boundary=x",
  "application/merge-patch+json",
  "application/problem+json",
  "application/vnd.api+json",
  "text/json",
  "text/plain",
  "text/plain; charset=utf-8",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "multipart/form-data",
  "application/octet-stream",
  "*/*",
  "application/*",
  "json",
  "",
  ";",
  "garbage/garbage",
];

/** `null` for no Content-Type header at all. */
export const contentType: fc.Arbitrary<string | null> = fc.oneof(
  { weight: 6, arbitrary: fc.constant("application/json") },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 4, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
  { weight: 1, arbitrary: printable(40) },
);

export const QUERY_VALUES = [
  "1",
  "0",
  "-1",
  "2",
  "100",
  "101",
  "1000000",
  "1000001",
  "1e3",
  "1.5",
  "0x10",
  "%201",
  "abc",
  "",
  "%",
  "%zz",
  "%00",
  "%E0%A4%A",
  "%ff%fe",
  "true",
  "null",
  "[]",
  "9999999999999999999999",
  "00000000-0000-0000-0000-000000000000",
  "urn:uuid:00000000-0000-0000-0000-000000000000",
];

export function safeEncode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return text.replace(/[\ud800-\udfff]/g, "%ED%A0%80");
  }
}

export interface QueryParts {
  readonly ids: readonly string[];
  readonly keys: readonly string[];
  readonly values: readonly string[];
}

/** Random `?k=v&…` strings over the endpoint's keys and values, sometimes with a long run of `id=` pairs. */
export function queryStringOf({ ids, keys, values }: QueryParts): fc.Arbitrary<string> {
  const value = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...values) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: fc.constantFrom(...ids) },
    { weight: 1, arbitrary: printable(30) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 20 }).map(safeEncode) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 20 }) },
  );
  const key = fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...keys) }, printable(10));
  const pair = fc.tuple(key, fc.option(value, { freq: 8 })).map(([k, v]) => (v === null ? k : `${k}=${v}`));
  const manyIds = fc
    .array(fc.oneof(fc.uuid(), fc.constantFrom(...ids)), { minLength: 1, maxLength: 120 })
    .map((list) => list.map((id) => `id=${id}`));
  return fc
    .tuple(
      fc.array(pair, { maxLength: 8 }),
      sometimes(manyIds, 1, 4),
      fc.constantFrom("&", "&", "&", ";", "&&"),
      fc.constantFrom("?", "?", "?", "??", "?&"),
    )
    .map(([pairs, many, separator, start]) => {
      const all = [...pairs, ...(many ?? [])];
      return all.length === 0 ? "" : start + all.join(separator);
    });
}

export const PATH_GARBAGE = [
  "",
  "%",
  "%zz",
  "%2",
  "%00",
  "%2F",
  "%2f..",
  "..",
  ".",
  "key",
  "null",
  "undefined",
  "0",
  "-1",
  "%E0%A4%A",
  "%ff%fe",
  "%C0%AF",
  "a%20b",
  "{id}",
  ":id",
  "*",
  ";",
  "00000000-0000-0000-0000-000000000000",
  "ffffffff-ffff-ffff-ffff-ffffffffffff",
  "x".repeat(101),
  "%41".repeat(40),
];

/** A path segment for `:id`: real ids (and near misses), random uuids, and garbage. */
export function idSegment(ids: readonly string[]): fc.Arbitrary<string> {
  const real = fc.constantFrom(...ids);
  return fc.oneof(
    { weight: 4, arbitrary: real },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 1, arbitrary: real.map((id) => id.toUpperCase()) },
    { weight: 1, arbitrary: real.map((id) => `urn:uuid:${id}`) },
    { weight: 1, arbitrary: fc.tuple(real, printable(5)).map(([id, s]) => safeEncode(id + s)) },
    { weight: 1, arbitrary: real.map((id) => id.replace(/-/g, "")) },
    { weight: 2, arbitrary: fc.constantFrom(...PATH_GARBAGE) },
    { weight: 1, arbitrary: printable(30).map((s) => s.replace(/[/?#]/g, "")) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 20 }).map(safeEncode) },
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Keys and headers

export type Header = readonly [string, string];

/** Missing, mangled, doubled and misplaced API keys, built from the test's real keys. */
export function fuzzedKeyOf(realKeys: readonly string[]): fc.Arbitrary<readonly Header[]> {
  const realKey = fc.constantFrom(...realKeys);
  const long = fc
    .tuple(
      printable(8).filter((s) => s.trim().length > 0),
      fc.integer({ min: 1_000, max: 8_000 }),
    )
    .map(([s, n]) => s.repeat(Math.ceil(n / s.length)).slice(0, n));
  const value = fc.oneof(
    fc.constantFrom("", " ", "null", "undefined", "Bearer", "key_mgt_", "key_prv_", "key_pub_"),
    printable(60),
    long,
    fc.tuple(realKey, printable(10)).map(([k, s]) => k + s),
    fc.tuple(printable(10), realKey).map(([s, k]) => s + k),
    realKey.map((k) => k.toUpperCase()),
    realKey.map((k) => k.slice(0, -1)),
    fc
      .tuple(
        fc.constantFrom("key_mgt_", "key_prv_", "key_pub_"),
        fc.base64String({ minLength: 43, maxLength: 44 }),
      )
      .map(([p, s]) => p + s.slice(0, 43)),
  );
  return fc.oneof(
    fc.constant([]),
    value.map((v) => [["svc-api-key", v] as const]),
    fc.tuple(realKey, value).map(([k, v]) => [["svc-api-key", k] as const, ["svc-api-key", v] as const]),
    fc
      .tuple(fc.constantFrom("svc_api_key", "x-api-key", "api-key", "authorization", "svc-api-keys"), realKey)
      .map(([name, k]) => [[name, k] as const]),
    realKey.map((k) => [["authorization", `Bearer ${k}`] as const]),
  );
}

export const extraHeaders: fc.Arbitrary<readonly Header[]> = fc.array(
  fc.tuple(
    fc.oneof(
      fc.constantFrom(
        "accept",
        "accept-encoding",
        "accept-language",
        "content-encoding",
        "content-language",
        "authorization",
        "cookie",
        "origin",
        "referer",
        "x-request-id",
        "request-id",
        "x-forwarded-for",
        "x-forwarded-proto",
        "x-http-method-override",
        "if-match",
        "if-none-match",
        "range",
      ),
      fc.stringMatching(/^x-[a-z0-9-]{1,20}$/),
    ),
    fc.oneof(
      fc.constantFrom(
        "gzip",
        "br",
        "deflate",
        "identity",
        "*/*",
        "text/html",
        "application/xml",
        "DELETE",
        "bytes=0-1",
      ),
      printable(80),
    ),
  ),
  { maxLength: 3 },
);

// ---------------------------------------------------------------------------------------------------------------
// Endpoints

export interface Endpoint<C> {
  readonly name: string;
  readonly method: string;
  readonly path: (ctx: C) => fc.Arbitrary<string>;
  readonly takesBody: boolean;
}

export interface Aspects {
  readonly body: fc.Arbitrary<string | Uint8Array>;
  readonly contentType: fc.Arbitrary<string | null>;
  readonly query: fc.Arbitrary<string>;
  readonly key: fc.Arbitrary<readonly Header[]>;
  readonly headers: fc.Arbitrary<readonly Header[]>;
  /** Replaces the method now and then, so that routes are also hit with methods they do not answer. */
  readonly otherMethod?: boolean;
}

export function requests<C>(
  ctx: C,
  endpoints: readonly Endpoint<C>[],
  aspects: Aspects,
): fc.Arbitrary<FuzzRequest> {
  return fc.oneof(
    ...endpoints.map((endpoint) =>
      fc
        .record({
          path: endpoint.path(ctx),
          query: aspects.query,
          key: aspects.key,
          headers: aspects.headers,
          contentType: aspects.contentType,
          body: fc.option(aspects.body, { freq: 10 }),
          method: aspects.otherMethod
            ? fc.oneof(
                { weight: 4, arbitrary: fc.constant(endpoint.method) },
                {
                  weight: 1,
                  arbitrary: fc.constantFrom("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND"),
                },
              )
            : fc.constant(endpoint.method),
        })
        .map(({ path, query, key, headers, contentType, body, method }) => {
          const withBody =
            method !== "GET" && (endpoint.takesBody || aspects.otherMethod === true) && body !== null;
          const all: Header[] = [...key, ...headers];
          if (withBody && contentType !== null) all.push(["content-type", contentType]);
          return fuzzRequest({ method, target: path + query, headers: all, ...(withBody && { body }) });
        }),
    ),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Search queries

/** Fragments of real queries and their syntax, glued at random: strings that get far into the parser first. */
export const QUERY_FRAGMENTS = [
  "type:token",
  "type:social_security_number",
  "data:123-45-6789",
  "data:6789",
  "metadata.region:eu",
  'metadata.region:"EU"',
  'container:"/pci/*"',
  "container:/pci/high/",
  "created_at:[2024-01-01 TO *]",
  "modified_at:{* TO 2025-12-31T23:59:59.999Z]",
  "created_at:2024-02-29",
  "id:abc",
  "fingerprint:x",
  "created_by:00000000-0000-7000-8000-000000000000",
  "AND",
  "OR",
  "NOT",
  " AND ",
  " OR ",
  "NOT ",
  "!",
  "-",
  "(",
  ")",
  '"',
  "\\",
  "[",
  "]",
  "{",
  "}",
  ":",
  "*",
  " TO ",
  " ",
  "\t",
  "\u0000",
  "\ud800",
  "é",
  "😀",
];

export const nearValidQuery = (maxPieces = 40) =>
  fc.array(fc.constantFrom(...QUERY_FRAGMENTS), { maxLength: maxPieces }).map((parts) => parts.join(""));
