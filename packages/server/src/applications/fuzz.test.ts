import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../test/harness.js";

/*
 * Property: no malformed request to an Applications (or tenant) endpoint produces a 5xx. Every answer is below
 * 500, and every 4xx is an RFC 9457 problem+json document. Bodies, content types, query strings, path ids and
 * headers are random or mutated from valid requests. TESSERA_FUZZ_RUNS and TESSERA_FUZZ_SEED reproduce a run.
 */

const NUM_RUNS = Number(process.env.TESSERA_FUZZ_RUNS ?? 150);
const SEED = process.env.TESSERA_FUZZ_SEED === undefined ? undefined : Number(process.env.TESSERA_FUZZ_SEED);
const RUN_PARAMETERS = { numRuns: NUM_RUNS, ...(SEED !== undefined && { seed: SEED }) };
const PROPERTY_TIMEOUT_MS = 180_000;
const REQUEST_TIMEOUT_MS = 10_000;

// ---------------------------------------------------------------------------------------------------------------
// The oracle

interface Observed {
  readonly status: number;
  readonly contentType: string | null;
  readonly text: string;
}

/** Everything wrong with a response to a fuzzed request; empty when it honours the contract. */
function violations(response: Observed): string[] {
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

function parses(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// ---------------------------------------------------------------------------------------------------------------
// Requests

interface FuzzRequest {
  readonly method: string;
  /** Path and query string, exactly as appended to the server's URL. */
  readonly target: string;
  readonly headers: readonly (readonly [string, string])[];
  readonly body?: string | Uint8Array;
}

function preview(value: string, max = 600): string {
  const shown = JSON.stringify(value.length > max ? value.slice(0, max) : value);
  return value.length > max ? `${shown}…(${value.length} chars)` : shown;
}

function describeRequest(request: FuzzRequest): string {
  const headers = request.headers.map(([name, value]) => `  ${name}: ${preview(value, 120)}`).join("\n");
  let body = "(none)";
  if (typeof request.body === "string") body = preview(request.body);
  else if (request.body !== undefined)
    body = `bytes ${Buffer.from(request.body).toString("hex").slice(0, 600)}`;
  return `${request.method} ${preview(request.target, 300)}\n${headers}\n  body: ${body}`;
}

/** Counterexamples print as a readable request rather than a huge object. */
function fuzzRequest(request: FuzzRequest): FuzzRequest {
  return Object.assign({}, request, { [fc.toStringMethod]: () => describeRequest(request) });
}

async function perform(baseUrl: string, request: FuzzRequest): Promise<Observed> {
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

// ---------------------------------------------------------------------------------------------------------------
// Generators

const printableChar = fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code));
const printable = (maxLength = 40) => fc.string({ unit: printableChar, maxLength });
const loneSurrogate = fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code));
const controlChar = fc
  .oneof(fc.constant(0), fc.integer({ min: 1, max: 0x1f }), fc.constant(0x7f))
  .map((code) => String.fromCharCode(code));
/** Mostly printable, with control characters (NUL included), lone surrogates and any code point mixed in. */
const weirdChar = fc.oneof(
  { weight: 6, arbitrary: printableChar },
  { weight: 2, arbitrary: controlChar },
  { weight: 1, arbitrary: loneSurrogate },
  { weight: 2, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
);

const SPECIAL_STRINGS = [
  "",
  " ",
  "   ",
  "\t\n",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udfffy",
  "\u202eevil",
  "\ufeff",
  "𝕏𝔶𝕫",
  "e\u0301",
  "null",
  "true",
  "1",
  "-1",
  "[]",
  "{}",
  "__proto__",
  "constructor",
  "' OR 1=1 --",
  "%",
  "%zz",
  "/pci/",
  "/PCI/HIGH/",
  "/",
  "//",
  "pci",
  "/a b/",
  "/../",
  "token:use",
  "token:read",
  "application:read",
  "tenant:create",
  "private",
  "public",
  "management",
  "mask",
  "reveal",
  "redact",
  "id",
  "container",
  "equals",
  "starts_with",
  "2999-01-01T00:00:00Z",
  "2000-01-01T00:00:00Z",
  "2999-02-30T00:00:00Z",
  "2999-12-31T23:59:60Z",
  "9999-12-31T23:59:59Z",
  "9999-12-31T23:59:59-23:59",
  "2999-01-01t00:00:00z",
  "+275760-09-13T00:00:00Z",
  "0000-01-01T00:00:00Z",
  "00000000-0000-0000-0000-000000000000",
];

const hugeString = fc
  .constantFrom(201, 401, 1001, 65_536, 1_100_000)
  .chain((length) => printableChar.map((c) => c.repeat(length)));

const weirdString = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 30 }) },
  { weight: 3, arbitrary: fc.string({ unit: weirdChar, maxLength: 20 }) },
  { weight: 1, arbitrary: hugeString },
);

const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom<unknown>(
      null,
      true,
      false,
      0,
      -0,
      -1,
      1,
      1.5,
      1e308,
      -1e308,
      Number.MIN_VALUE,
      2 ** 53 + 1,
      1_000_000,
      1_000_001,
      [],
      {},
      [null],
      [[]],
      { "": null },
      ["token:use", "token:use"],
      [{ attribute: "id", operator: "equals", value: "x" }],
    ),
  },
  { weight: 3, arbitrary: weirdString },
  { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
);

/** JSON text that JSON.stringify cannot produce: spliced into a body in place of a marker value. */
const rawJsonText = fc.oneof(
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
    '{"name":"a","name":1}',
    '{"priority":1,"priority":"1"}',
    '{"__proto__":{"type":"management"}}',
    '{"constructor":{"prototype":{"polluted":true}}}',
  ),
  fc
    .tuple(fc.constantFrom(10, 1_000, 100_000), fc.boolean())
    .map(([depth, array]) =>
      array ? "[".repeat(depth) + "]".repeat(depth) : '{"a":'.repeat(depth) + "1" + "}".repeat(depth),
    ),
);

const keyName = fc.oneof(
  fc.constantFrom(
    "name",
    "type",
    "permissions",
    "rules",
    "expires_at",
    "priority",
    "container",
    "conditions",
    "transform",
    "description",
    "id",
    "key",
    "tenant_id",
    "created_by",
    "__proto__",
    "constructor",
    "prototype",
    "toString",
    "hasOwnProperty",
    "",
  ),
  fc.string({ maxLength: 12 }),
);

type Mutation =
  | { readonly kind: "delete"; readonly at: number }
  | { readonly kind: "replace"; readonly at: number; readonly value: unknown }
  | { readonly kind: "string"; readonly at: number; readonly value: string }
  | { readonly kind: "rename"; readonly at: number; readonly key: string }
  | { readonly kind: "raw"; readonly at: number; readonly text: string }
  | { readonly kind: "add"; readonly at: number; readonly key: string; readonly value: unknown }
  | { readonly kind: "wrap"; readonly at: number; readonly depth: number; readonly inArray: boolean }
  | { readonly kind: "repeat"; readonly at: number; readonly times: number };

const at = fc.nat();
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
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

type TextMutation =
  | { readonly kind: "duplicate-key"; readonly key: string; readonly value: string; readonly first: boolean }
  | { readonly kind: "truncate"; readonly at: number }
  | { readonly kind: "wrap"; readonly prefix: string; readonly suffix: string };

const textMutation: fc.Arbitrary<TextMutation> = fc.oneof(
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

/** `value` in `weight` out of `outOf` cases, `null` otherwise. */
function sometimes<T>(value: fc.Arbitrary<T>, weight: number, outOf: number): fc.Arbitrary<T | null> {
  return fc.oneof({ weight: outOf - weight, arbitrary: fc.constant(null) }, { weight, arbitrary: value });
}

type Path = (string | number)[];

function pathsOf(value: unknown, prefix: Path = [], out: Path[] = []): Path[] {
  out.push(prefix);
  if (Array.isArray(value)) value.forEach((item, i) => pathsOf(item, [...prefix, i], out));
  else if (isObject(value))
    for (const [key, item] of Object.entries(value)) pathsOf(item, [...prefix, key], out);
  return out;
}

function getAt(root: unknown, path: Path): unknown {
  let value = root;
  for (const step of path) value = (value as Record<string | number, unknown>)[step];
  return value;
}

/** Sets an own property even for "__proto__", which plain assignment would turn into a prototype change. */
function define(target: object, key: string | number, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

function setAt(root: unknown, path: Path, value: unknown): unknown {
  if (path.length === 0) return value;
  define(getAt(root, path.slice(0, -1)) as object, path[path.length - 1]!, value);
  return root;
}

function applyMutations(valid: unknown, mutations: readonly Mutation[], raws: string[]): unknown {
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

function applyTextMutation(text: string, m: TextMutation): string {
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

const rule = {
  priority: 1,
  container: "/PCI/",
  transform: "mask",
  permissions: ["token:read", "token:search"],
};
const VALID_BODIES: readonly unknown[] = [
  { name: "x", type: "private", permissions: ["token:use"], rules: [rule] },
  {
    name: "conditions",
    type: "private",
    rules: [
      {
        priority: 2,
        transform: "reveal",
        permissions: ["token:read"],
        conditions: [{ attribute: "id", operator: "equals", value: "a" }],
      },
    ],
  },
  {
    name: "pub",
    type: "public",
    permissions: ["token:create"],
    rules: [{ ...rule, permissions: ["token:update"] }],
  },
  { name: "mgr", type: "management", permissions: ["application:read", "application:update"] },
  { name: "expiring", type: "private", permissions: ["token:use"], expires_at: "2999-01-01T00:00:00Z" },
  { name: "renamed", permissions: ["token:read"], rules: [{ ...rule, description: "d" }] },
  { name: "fuzz tenant" },
];

const validBodyText = fc.constantFrom(...VALID_BODIES).map((body) => JSON.stringify(body));

const mutatedBodyText = fc
  .record({
    valid: fc.constantFrom(...VALID_BODIES),
    // Mostly one mutation, so that the body stays valid elsewhere and the mutated part reaches the store.
    mutations: fc.oneof(
      { weight: 3, arbitrary: mutation.map((m) => [m]) },
      { weight: 1, arbitrary: fc.array(mutation, { minLength: 2, maxLength: 4 }) },
    ),
    text: sometimes(textMutation, 1, 4),
  })
  .map(({ valid, mutations, text }) => {
    const raws: string[] = [];
    const mutated = applyMutations(valid, mutations, raws);
    let json = JSON.stringify(mutated) ?? "";
    raws.forEach((raw, i) => {
      json = json.replace(`"@@raw${i}@@"`, () => raw);
    });
    return text === null ? json : applyTextMutation(json, text);
  });

const FREE_TEXT = new Set(["name", "description", "value"]);

/** A valid body with one free-text field (stored as is) replaced by an odd string: control characters, NUL, … */
const oddTextBodyText = fc
  .record({ valid: fc.constantFrom(...VALID_BODIES), pick: fc.nat(), value: weirdString })
  .map(({ valid, pick, value }) => {
    const body = structuredClone(valid);
    const fields = pathsOf(body).filter((p) => FREE_TEXT.has(String(p[p.length - 1])));
    return JSON.stringify(fields.length === 0 ? body : setAt(body, fields[pick % fields.length]!, value));
  });

const randomJsonText = fc.oneof(
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.anything({ maxDepth: 3 }).map((v) => {
    try {
      return JSON.stringify(v) ?? "";
    } catch {
      return "";
    }
  }),
);

const nonJsonBody: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "{",
    "}",
    "[",
    "{'name':'x'}",
    "{name:x}",
    '{"name":"x",}',
    "NaN",
    "undefined",
    "\u0000",
    "\ufeff{}",
    "name=x&type=private",
    '--x\r\nContent-Disposition: form-data; name="name"\r\n\r\nx\r\n--x--\r\n',
  ),
  fc.string({ maxLength: 60 }),
  fc.string({ unit: "binary", maxLength: 60 }),
  validBodyText.chain((text) => fc.nat({ max: text.length - 1 }).map((n) => text.slice(0, n))),
  fc.uint8Array({ maxLength: 80 }),
  fc
    .uint8Array({ maxLength: 40 })
    .map((bytes) => new Uint8Array([...Buffer.from('{"name":"'), ...bytes, ...Buffer.from('"}')])),
);

const CONTENT_TYPES = [
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
const contentType: fc.Arbitrary<string | null> = fc.oneof(
  { weight: 6, arbitrary: fc.constant("application/json") },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 4, arbitrary: fc.constantFrom(...CONTENT_TYPES) },
  { weight: 1, arbitrary: printable(40) },
);

const QUERY_VALUES = [
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
const QUERY_KEYS = [
  "page",
  "size",
  "id",
  "id[]",
  "id[0]",
  "ID",
  "Page",
  "__proto__",
  "constructor",
  "",
  "a",
  "%",
  "%zz",
];

function safeEncode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return text.replace(/[\ud800-\udfff]/g, "%ED%A0%80");
  }
}

function queryString(ids: readonly string[]): fc.Arbitrary<string> {
  const value = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...QUERY_VALUES) },
    { weight: 2, arbitrary: fc.uuid() },
    { weight: 2, arbitrary: fc.constantFrom(...ids) },
    { weight: 1, arbitrary: printable(30) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 20 }).map(safeEncode) },
    { weight: 1, arbitrary: fc.string({ unit: "binary", maxLength: 20 }) },
  );
  const key = fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...QUERY_KEYS) }, printable(10));
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

const PATH_GARBAGE = [
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
function idSegment(ids: readonly string[]): fc.Arbitrary<string> {
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

interface Context {
  readonly bootstrapKey: string;
  readonly managementKey: string;
  readonly privateKey: string;
  readonly bootstrapId: string;
  /** Ids that destructive endpoints may hit: never the bootstrap Application's. */
  readonly disposableIds: readonly string[];
  /** Only ever updated with valid requests, so that the store sees odd text rather than a 404. */
  readonly textTargetId: string;
}

type Header = readonly [string, string];

function validKey(ctx: Context): fc.Arbitrary<readonly Header[]> {
  return fc.oneof(
    { weight: 8, arbitrary: fc.constant([["svc-api-key", ctx.bootstrapKey] as const]) },
    { weight: 1, arbitrary: fc.constant([["SVC-API-KEY", ctx.managementKey] as const]) },
    { weight: 1, arbitrary: fc.constant([["svc-api-key", ctx.privateKey] as const]) },
  );
}

function fuzzedKey(ctx: Context): fc.Arbitrary<readonly Header[]> {
  const realKey = fc.constantFrom(ctx.bootstrapKey, ctx.managementKey, ctx.privateKey);
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

const extraHeaders: fc.Arbitrary<readonly Header[]> = fc.array(
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

interface Endpoint {
  readonly name: string;
  readonly method: string;
  readonly path: (ctx: Context) => fc.Arbitrary<string>;
  readonly takesBody: boolean;
}

const allIds = (ctx: Context) => [ctx.bootstrapId, ...ctx.disposableIds];

const ENDPOINTS: readonly Endpoint[] = [
  { name: "create", method: "POST", path: () => fc.constant("/applications"), takesBody: true },
  { name: "list", method: "GET", path: () => fc.constant("/applications"), takesBody: false },
  { name: "self", method: "GET", path: () => fc.constant("/applications/key"), takesBody: false },
  {
    name: "get",
    method: "GET",
    path: (ctx) => idSegment(allIds(ctx)).map((id) => `/applications/${id}`),
    takesBody: false,
  },
  {
    name: "update",
    method: "PUT",
    path: (ctx) => idSegment(ctx.disposableIds).map((id) => `/applications/${id}`),
    takesBody: true,
  },
  {
    name: "regenerate",
    method: "POST",
    path: (ctx) => idSegment(ctx.disposableIds).map((id) => `/applications/${id}/regenerate`),
    takesBody: true,
  },
  {
    name: "delete",
    method: "DELETE",
    path: (ctx) => idSegment(ctx.disposableIds).map((id) => `/applications/${id}`),
    takesBody: true,
  },
  { name: "create tenant", method: "POST", path: () => fc.constant("/tenants"), takesBody: true },
  { name: "own tenant", method: "GET", path: () => fc.constant("/tenants/self"), takesBody: false },
];

interface Aspects {
  readonly body: fc.Arbitrary<string | Uint8Array>;
  readonly contentType: fc.Arbitrary<string | null>;
  readonly query: fc.Arbitrary<string>;
  readonly key: fc.Arbitrary<readonly Header[]>;
  readonly headers: fc.Arbitrary<readonly Header[]>;
  /** Replaces the method now and then, so that routes are also hit with methods they do not answer. */
  readonly otherMethod?: boolean;
}

function requests(ctx: Context, endpoints: readonly Endpoint[], aspects: Aspects): fc.Arbitrary<FuzzRequest> {
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
// The tests

describe("the fuzzing oracle", () => {
  const problem = (status: number) => JSON.stringify({ type: "urn:tessera:problem:x", title: "X", status });
  it("accepts problem 4xx and JSON 2xx", () => {
    expect(
      violations({ status: 404, contentType: "application/problem+json; charset=utf-8", text: problem(404) }),
    ).toEqual([]);
    expect(violations({ status: 200, contentType: "application/json", text: "{}" })).toEqual([]);
    expect(violations({ status: 204, contentType: null, text: "" })).toEqual([]);
  });
  it("rejects a 5xx even as a well-formed problem, and a 4xx that is not one", () => {
    expect(
      violations({ status: 500, contentType: "application/problem+json", text: problem(500) }),
    ).not.toEqual([]);
    expect(
      violations({ status: 503, contentType: "application/problem+json", text: problem(503) }),
    ).not.toEqual([]);
    const fastify = '{"error":"Bad Request","code":"FST_ERR_BAD_URL","message":"x","statusCode":400}';
    expect(violations({ status: 400, contentType: "application/json", text: fastify })).not.toEqual([]);
    expect(
      violations({ status: 400, contentType: "application/problem+json", text: problem(401) }),
    ).not.toEqual([]);
    expect(violations({ status: 431, contentType: null, text: "" })).not.toEqual([]);
    const badErrors = JSON.stringify({ ...JSON.parse(problem(400)), errors: { name: "is required" } });
    expect(violations({ status: 400, contentType: "application/problem+json", text: badErrors })).not.toEqual(
      [],
    );
  });
});

describe.skipIf(STORE_UNAVAILABLE)("Applications API under fuzzing", () => {
  let server: TestServer;
  let ctx: Context;

  beforeAll(async () => {
    server = await startTestServer();
    const bootstrap = await server.request("GET", "/applications/key");
    const create = async (body: unknown) => {
      const response = await server.request("POST", "/applications", { body });
      expect(response.status, response.text).toBe(201);
      return response.body as { id: string; key: string };
    };
    const privateApp = await create(VALID_BODIES[0]);
    const managementApp = await create({
      name: "fuzz manager",
      type: "management",
      permissions: [
        "application:create",
        "application:read",
        "application:update",
        "application:delete",
        "tenant:read",
      ],
    });
    const textTarget = await create(VALID_BODIES[0]);
    ctx = {
      bootstrapKey: server.bootstrapKey,
      bootstrapId: (bootstrap.body as { id: string }).id,
      managementKey: managementApp.key,
      privateKey: privateApp.key,
      disposableIds: [privateApp.id, managementApp.id],
      textTargetId: textTarget.id,
    };
  });
  afterAll(() => server?.close());

  const holds = async (request: FuzzRequest) => {
    let response: Observed;
    try {
      response = await perform(server.url, request);
    } catch (error) {
      throw new Error(`no answer (${String(error)})\n${describeRequest(request)}`, { cause: error });
    }
    const found = violations(response);
    if (found.length > 0) {
      const answer = `${response.status} ${response.contentType ?? ""} ${preview(response.text, 1000)}`;
      throw new Error(`${found.join("; ")}\n${describeRequest(request)}\n→ ${answer}`);
    }
  };

  const plainQuery = fc.constant("");

  it(
    "answers mutated and random JSON bodies with a 4xx problem or a success",
    async () => {
      const body = fc.oneof(
        { weight: 1, arbitrary: validBodyText },
        { weight: 6, arbitrary: mutatedBodyText },
        { weight: 3, arbitrary: oddTextBodyText },
        { weight: 2, arbitrary: randomJsonText },
      );
      const arbitrary = requests(
        ctx,
        ENDPOINTS.filter((e) => e.takesBody),
        {
          body,
          contentType: fc.constant("application/json"),
          query: plainQuery,
          key: validKey(ctx),
          headers: fc.constant([]),
        },
      );
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "stores odd free text (NUL, control characters, lone surrogates) or rejects it with a 4xx problem",
    async () => {
      // Real ids only: garbage ids are the other properties' business; here the body must reach the store.
      const writes: Endpoint[] = [
        ...ENDPOINTS.filter((e) => e.name === "create" || e.name === "create tenant"),
        {
          name: "update",
          method: "PUT",
          path: (c) => fc.constant(`/applications/${c.textTargetId}`),
          takesBody: true,
        },
      ];
      const arbitrary = requests(ctx, writes, {
        body: oddTextBodyText,
        contentType: fc.constant("application/json"),
        query: plainQuery,
        key: fc.constant([["svc-api-key", ctx.bootstrapKey] as const]),
        headers: fc.constant([]),
      });
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "answers raw, non-JSON bodies under any content type with a 4xx problem or a success",
    async () => {
      const body = fc.oneof(nonJsonBody, validBodyText, mutatedBodyText);
      const arbitrary = requests(
        ctx,
        ENDPOINTS.filter((e) => e.takesBody),
        { body, contentType, query: plainQuery, key: validKey(ctx), headers: fc.constant([]) },
      );
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "answers random query strings and path ids with a 4xx problem or a success",
    async () => {
      const arbitrary = requests(ctx, ENDPOINTS, {
        body: validBodyText,
        contentType: fc.constant("application/json"),
        query: queryString(allIds(ctx)),
        key: validKey(ctx),
        headers: fc.constant([]),
      });
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "answers random API keys and headers with a 4xx problem or a success",
    async () => {
      const arbitrary = requests(ctx, ENDPOINTS, {
        body: fc.oneof(validBodyText, mutatedBodyText, oddTextBodyText),
        contentType,
        query: fc.oneof(plainQuery, queryString(allIds(ctx))),
        key: fc.oneof(validKey(ctx), fuzzedKey(ctx)),
        headers: extraHeaders,
      });
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    "answers everything fuzzed at once, with other methods too, with a 4xx problem or a success",
    async () => {
      const arbitrary = requests(ctx, ENDPOINTS, {
        body: fc.oneof(mutatedBodyText, oddTextBodyText, randomJsonText, nonJsonBody),
        contentType,
        query: fc.oneof(plainQuery, queryString(allIds(ctx))),
        key: fc.oneof(validKey(ctx), fuzzedKey(ctx)),
        headers: extraHeaders,
        otherMethod: true,
      });
      await fc.assert(fc.asyncProperty(arbitrary, holds), RUN_PARAMETERS);
    },
    PROPERTY_TIMEOUT_MS,
  );

  it("is still healthy afterwards, and the bootstrap key still works", async () => {
    const health = await fetch(`${server.url}/healthz`);
    expect(health.status).toBe(200);
    const self = await server.request("GET", "/applications/key");
    expect(self.status, self.text).toBe(200);
    expect((self.body as { id: string }).id).toBe(ctx.bootstrapId);
    const created = await server.request("POST", "/applications", { body: VALID_BODIES[0] });
    expect(created.status, created.text).toBe(201);
  });
});
