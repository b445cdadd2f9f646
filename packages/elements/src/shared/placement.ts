import { isPlainObject } from "./shape.js";
import type { JsonValue } from "./json.js";
import type { Endpoint, FieldValue, Ref } from "./protocol.js";

/**
 * Where an entered value may go in a request body (docs/elements.md#where-a-value-may-go). The page writes the
 * body, so the page chooses where each value lands; these rules keep every landing place one whose contents the
 * vault never shows back to the page's key in a form that gives the value away:
 *
 * - only inside the `data` of a token request (never `id`, `metadata`, `containers`, the expressions, ...);
 * - a card number only as a `card`'s `data.number` or a `card_number`'s `data`, a verification code only as a
 *   `card`'s `data.cvc`, the expiry parts only as a `card`'s `data.expiration_month` and `.expiration_year`,
 *   where the vault holds masks and alias ids to PCI DSS limits; a `text` value anywhere inside any `data`;
 * - a token request holding a value may not choose its `mask`, `fingerprint_expression` or `search_indexes`,
 *   nor an alias `id` expression: each would turn the value into something the page reads back (a mask shows
 *   it, a fingerprint of a chosen expression over three digits is a lookup table away from the digits);
 * - each value fills a `null` the page left for it, once.
 */

/** Members of a token request the page may not set when the request holds an entered value. */
const CHOSEN_EXPRESSIONS = ["mask", "fingerprint_expression", "search_indexes"] as const;

export type Placement =
  { readonly ok: true; readonly body: JsonValue } | { readonly ok: false; readonly message: string };

type Scalar = string | number;

/** The value a ref stands for, or a reason it cannot stand for one. */
function scalarOf(value: FieldValue, part: Ref["part"]): Scalar | string[] {
  switch (value.type) {
    case "cardExpirationDate":
      if (part === "month") return value.month;
      if (part === "year") return value.year;
      return ["an expiration date is placed by its parts, month() and year()"];
    case "cardNumber":
    case "cardVerificationCode":
    case "text":
      return part === "value" ? value.value : [`a ${value.type} field has no ${part} part`];
  }
}

/** Whether a value of this field type may sit at `rest` (the path below the token request) of a `type` token. */
function allowedAt(
  value: FieldValue,
  part: Ref["part"],
  type: string,
  rest: readonly (string | number)[],
): boolean {
  const at = (...expected: string[]) =>
    rest.length === expected.length && expected.every((s, i) => rest[i] === s);
  switch (value.type) {
    case "cardNumber":
      return (type === "card" && at("data", "number")) || (type === "card_number" && at("data"));
    case "cardVerificationCode":
      return type === "card" && at("data", "cvc");
    case "cardExpirationDate":
      return type === "card" && at("data", part === "month" ? "expiration_month" : "expiration_year");
    case "text":
      return rest[0] === "data";
  }
}

/**
 * The token request a path runs through: for `POST /tokens` the body itself; for `POST /tokenize` the first
 * object on the path with a string `type`, as the vault reads a tokenize body.
 */
function tokenRequestOn(
  endpoint: Endpoint,
  body: JsonValue,
  path: readonly (string | number)[],
): { request: Record<string, unknown>; depth: number } | undefined {
  if (endpoint === "tokens") return isPlainObject(body) ? { request: body, depth: 0 } : undefined;
  let node: unknown = body;
  for (let depth = 0; depth < path.length; depth++) {
    if (isPlainObject(node) && typeof node.type === "string") return { request: node, depth };
    node = child(node, path[depth]!);
    if (node === undefined) return undefined;
  }
  return undefined;
}

function child(node: unknown, segment: string | number): unknown {
  if (Array.isArray(node)) return typeof segment === "number" ? (node as unknown[])[segment] : undefined;
  if (isPlainObject(node) && typeof segment === "string" && Object.hasOwn(node, segment))
    return node[segment];
  return undefined;
}

/** Puts the values into a copy of the body, or says which rule a ref breaks. The body given is not changed. */
export function placeValues(
  endpoint: Endpoint,
  body: JsonValue,
  refs: readonly Ref[],
  values: ReadonlyMap<string, FieldValue>,
): Placement {
  const copy = JSON.parse(JSON.stringify(body)) as JsonValue;
  const filled = new Set<string>();
  for (const ref of refs) {
    const where = ref.path.join(".");
    const value = values.get(ref.element);
    if (value === undefined) return refused(where, "refers to no field");
    const scalar = scalarOf(value, ref.part);
    if (Array.isArray(scalar)) return refused(where, scalar[0]!);
    const found = tokenRequestOn(endpoint, copy, ref.path);
    if (found === undefined) return refused(where, "is not inside a token request");
    const type = typeof found.request.type === "string" ? found.request.type : "token";
    if (!allowedAt(value, ref.part, type, ref.path.slice(found.depth))) {
      return refused(where, `may not hold a ${value.type} value in a ${type} token`);
    }
    for (const member of CHOSEN_EXPRESSIONS) {
      if (Object.hasOwn(found.request, member))
        return refused(where, `is in a token request that sets ${member}`);
    }
    const id = found.request.id;
    if (id !== undefined && (typeof id !== "string" || id.includes("{{"))) {
      return refused(where, "is in a token request whose id is an expression");
    }
    const parent = ref.path.slice(0, -1).reduce<unknown>((node, segment) => child(node, segment), copy);
    const last = ref.path[ref.path.length - 1]!;
    if (child(parent, last) !== null || filled.has(JSON.stringify(ref.path))) {
      return refused(where, "is not a null left for one value");
    }
    filled.add(JSON.stringify(ref.path));
    (parent as Record<string | number, Scalar>)[last] = scalar;
  }
  return { ok: true, body: copy };
}

function refused(where: string, why: string): Placement {
  return { ok: false, message: `The field reference at ${where} ${why}.` };
}

/**
 * Whether the vault's answer shows an entered secret (a card number, a verification code, a text value): a key
 * whose token:create rule reveals would hand the page what Elements keeps from it. Card numbers are looked for
 * among the digits of every string, so `4242 4242 …` is found too; the rest as whole strings, and text of six
 * characters or more also inside longer strings.
 */
export function revealsValue(answer: JsonValue, values: readonly FieldValue[]): boolean {
  const secrets = values.filter((value) => value.type !== "cardExpirationDate" && value.value.length > 0);
  if (secrets.length === 0) return false;
  const shows = (text: string) =>
    secrets.some((secret) => {
      switch (secret.type) {
        case "cardNumber":
          return text.replace(/\D/g, "").includes(secret.value);
        case "cardVerificationCode":
          return text.trim() === secret.value;
        case "text":
          return text === secret.value || (secret.value.length >= 6 && text.includes(secret.value));
        case "cardExpirationDate":
          return false;
      }
    });
  const pending: unknown[] = [answer];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node === "string" && shows(node)) return true;
    if (typeof node === "number" && shows(String(node))) return true;
    if (Array.isArray(node)) pending.push(...(node as unknown[]));
    else if (isPlainObject(node)) {
      for (const [key, member] of Object.entries(node)) {
        if (shows(key)) return true;
        pending.push(member);
      }
    }
  }
  return false;
}
