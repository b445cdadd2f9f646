import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { JsonValue } from "../src/shared/json.js";
import { placeValues, revealsValue } from "../src/shared/placement.js";
import type { Endpoint, FieldValue, Ref } from "../src/shared/protocol.js";

const NUMBER = "4242424242424242";
const ID = {
  number: "a".repeat(32),
  expiry: "b".repeat(32),
  cvc: "c".repeat(32),
  text: "d".repeat(32),
};
const VALUES = new Map<string, FieldValue>([
  [ID.number, { type: "cardNumber", value: NUMBER }],
  [ID.expiry, { type: "cardExpirationDate", month: 12, year: 2030 }],
  [ID.cvc, { type: "cardVerificationCode", value: "987" }],
  [ID.text, { type: "text", value: "Jane Q. Shopper" }],
]);
const ref = (path: (string | number)[], element: string, part: Ref["part"] = "value"): Ref => ({
  path,
  element,
  part,
});

function placed(endpoint: Endpoint, body: JsonValue, refs: Ref[]) {
  const before = JSON.stringify(body);
  const result = placeValues(endpoint, body, refs, VALUES);
  expect(JSON.stringify(body)).toBe(before);
  return result;
}

describe("placeValues", () => {
  it("fills a card's fields, a card_number's data and text anywhere in a data", () => {
    const card = placed(
      "tokens",
      {
        type: "card",
        data: { number: null, expiration_month: null, expiration_year: null, cvc: null },
        metadata: { a: "b" },
      },
      [
        ref(["data", "number"], ID.number),
        ref(["data", "expiration_month"], ID.expiry, "month"),
        ref(["data", "expiration_year"], ID.expiry, "year"),
        ref(["data", "cvc"], ID.cvc),
      ],
    );
    expect(card).toEqual({
      ok: true,
      body: {
        type: "card",
        data: { number: NUMBER, expiration_month: 12, expiration_year: 2030, cvc: "987" },
        metadata: { a: "b" },
      },
    });
    const tokenize = placed(
      "tokenize",
      {
        cards: [{ type: "card_number", data: null, containers: ["/pci/"] }],
        person: { type: "token", data: { name: null } },
      },
      [ref(["cards", 0, "data"], ID.number), ref(["person", "data", "name"], ID.text)],
    );
    expect(tokenize).toEqual({
      ok: true,
      body: {
        cards: [{ type: "card_number", data: NUMBER, containers: ["/pci/"] }],
        person: { type: "token", data: { name: "Jane Q. Shopper" } },
      },
    });
    expect(placed("tokens", { data: null, id: "order-1" }, [ref(["data"], ID.text)])).toMatchObject({
      ok: true,
    });
  });

  it.each<[string, Endpoint, JsonValue, Ref]>([
    [
      "metadata",
      "tokens",
      { type: "card", data: { number: "4242424242424242" }, metadata: { m: null } },
      ref(["metadata", "m"], ID.number),
    ],
    ["id", "tokens", { type: "token", id: null, data: "x" }, ref(["id"], ID.text)],
    [
      "containers",
      "tokens",
      { type: "token", data: "x", containers: [null] },
      ref(["containers", 0], ID.text),
    ],
    [
      "a chosen mask",
      "tokens",
      { type: "card", data: { number: null }, mask: { number: "{{ data.number }}" } },
      ref(["data", "number"], ID.number),
    ],
    [
      "a chosen fingerprint",
      "tokens",
      { type: "card", data: { number: NUMBER, cvc: null }, fingerprint_expression: "{{ data.cvc }}" },
      ref(["data", "cvc"], ID.cvc),
    ],
    [
      "chosen search indexes",
      "tokens",
      { type: "token", data: null, search_indexes: ["{{ data }}"] },
      ref(["data"], ID.text),
    ],
    [
      "an alias id",
      "tokens",
      { type: "card_number", data: null, id: "{{ data | alias_card: true, true }}" },
      ref(["data"], ID.number),
    ],
    ["a non-string id", "tokens", { type: "card_number", data: null, id: 5 }, ref(["data"], ID.number)],
    ["a card number in a generic token", "tokens", { type: "token", data: null }, ref(["data"], ID.number)],
    [
      "a card number as a card's cvc",
      "tokens",
      { type: "card", data: { cvc: null } },
      ref(["data", "cvc"], ID.number),
    ],
    ["a cvc in a card_number", "tokens", { type: "card_number", data: null }, ref(["data"], ID.cvc)],
    [
      "a cvc beside a card",
      "tokens",
      { type: "card", data: { number: NUMBER, extra: null } },
      ref(["data", "extra"], ID.cvc),
    ],
    [
      "a month as a year",
      "tokens",
      { type: "card", data: { expiration_year: null } },
      ref(["data", "expiration_year"], ID.expiry, "month"),
    ],
    [
      "an expiry as a whole",
      "tokens",
      { type: "card", data: { expiration_month: null } },
      ref(["data", "expiration_month"], ID.expiry),
    ],
    [
      "a number's month",
      "tokens",
      { type: "card", data: { number: null } },
      ref(["data", "number"], ID.number, "month"),
    ],
    [
      "a slot that is not null",
      "tokens",
      { type: "card_number", data: "4111111111111111" },
      ref(["data"], ID.number),
    ],
    ["a slot that does not exist", "tokens", { type: "card", data: {} }, ref(["data", "number"], ID.number)],
    ["a leaf outside any token request", "tokenize", { card: null }, ref(["card"], ID.text)],
    [
      "an array index as a member",
      "tokenize",
      { list: [{ type: "token", data: null }] },
      ref(["list", "0", "data"], ID.text),
    ],
    ["an unknown field", "tokens", { type: "token", data: null }, ref(["data"], "e".repeat(32))],
    [
      "a card request nested in a token's data",
      "tokenize",
      { type: "token", data: { type: "card", data: { number: null } } },
      ref(["data", "data", "number"], ID.number),
    ],
  ])("refuses a value in %s", (_name, endpoint, body, reference) => {
    const result = placed(endpoint, body, [reference]);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.message).toMatch(/^The field reference at .+\.$/);
  });

  it("refuses two values in one slot", () => {
    const body = { type: "card_number", data: null };
    expect(placed("tokens", body, [ref(["data"], ID.number), ref(["data"], ID.number)]).ok).toBe(false);
  });

  // The property behind the rules: whatever the page writes, a value that is placed ends up only inside the data
  // of a token request that chooses no expression, and card values only where the vault applies PCI limits.
  const requestArbitrary = fc
    .record({
      type: fc.constantFrom("card", "card_number", "token", "social_security_number"),
      data: fc.oneof(
        fc.constant(null),
        fc.record({
          number: fc.constant(null),
          cvc: fc.constant(null),
          expiration_month: fc.constant(null),
          expiration_year: fc.constant(null),
          note: fc.constant(null),
        }),
      ),
      metadata: fc.boolean(),
      // Half the requests choose their expressions, half do not, so that both kinds are met often.
      expressions: fc.boolean(),
      id: fc.constantFrom(undefined, "order-1", "{{ data }}", null),
      containers: fc.boolean(),
    })
    .map(({ metadata, expressions, id, containers, ...request }) => ({
      ...request,
      ...(metadata && { metadata: { m: null } }),
      ...(expressions && {
        mask: "{{ data }}",
        fingerprint_expression: "{{ data }}",
        search_indexes: ["{{ data }}"],
      }),
      ...(id !== undefined && { id }),
      ...(containers && { containers: [null] }),
    }));
  const bodyArbitrary = fc.record({
    one: requestArbitrary,
    many: fc.array(requestArbitrary, { maxLength: 3 }),
    loose: fc.record({ leaf: fc.constant(null), inner: fc.record({ leaf: fc.constant(null) }) }),
  });

  function nullPaths(node: unknown, path: (string | number)[] = []): (string | number)[][] {
    if (node === null) return [path];
    if (Array.isArray(node)) return node.flatMap((item, index) => nullPaths(item, [...path, index]));
    if (typeof node === "object")
      return Object.entries(node).flatMap(([key, value]) => nullPaths(value, [...path, key]));
    return [];
  }

  function at(node: unknown, path: readonly (string | number)[]): unknown {
    return path.reduce<unknown>(
      (current, segment) => (current as Record<string | number, unknown>)[segment],
      node,
    );
  }

  it("places values only inside the data of token requests that choose no expression", () => {
    const elements = [
      [ID.number, "value"],
      [ID.cvc, "value"],
      [ID.text, "value"],
      [ID.expiry, "month"],
      [ID.expiry, "year"],
    ] as const;
    fc.assert(
      fc.property(
        bodyArbitrary,
        fc.array(fc.tuple(fc.nat(), fc.nat()), { minLength: 1, maxLength: 3 }),
        (body, picks) => {
          const slots = nullPaths(body);
          fc.pre(slots.length > 0);
          const refs = picks.map(([slot, element]) => {
            const [id, part] = elements[element % elements.length]!;
            return ref(slots[slot % slots.length]!, id, part);
          });
          const result = placeValues("tokenize", body, refs, VALUES);
          if (!result.ok) return;
          for (const reference of refs) {
            const [name, index] = reference.path as [string, number | string];
            const requestPath = name === "many" ? ["many", index] : name === "one" ? ["one"] : undefined;
            expect(requestPath, JSON.stringify(reference.path)).toBeDefined();
            const request = at(result.body, requestPath!) as Record<string, unknown>;
            const below = reference.path.slice(requestPath!.length);
            expect(below[0]).toBe("data");
            for (const member of ["mask", "fingerprint_expression", "search_indexes"])
              expect(request).not.toHaveProperty(member);
            expect(typeof request.id === "string" && request.id.includes("{{")).toBe(false);
            const value = VALUES.get(reference.element)!;
            if (
              value.type === "cardNumber" ||
              value.type === "cardVerificationCode" ||
              value.type === "cardExpirationDate"
            ) {
              expect(["card", "card_number"]).toContain(request.type);
            }
            expect(at(result.body, reference.path)).not.toBeNull();
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});

describe("revealsValue", () => {
  const values = [...VALUES.values()];

  it("finds a card number however it is grouped, a code or a text as a whole string", () => {
    expect(revealsValue({ data: { number: NUMBER } }, values)).toBe(true);
    expect(revealsValue({ data: "4242 4242 4242 4242" }, values)).toBe(true);
    expect(revealsValue({ nested: [{ x: "card 4242-4242-4242-4242 here" }] }, values)).toBe(true);
    expect(revealsValue({ data: { cvc: "987" } }, values)).toBe(true);
    expect(revealsValue({ data: { name: "Jane Q. Shopper" } }, values)).toBe(true);
    expect(revealsValue({ note: "from Jane Q. Shopper's card" }, values)).toBe(true);
    expect(revealsValue({ [NUMBER]: 1 }, values)).toBe(true);
  });

  it("lets masked answers and unrelated digits through", () => {
    const answer = {
      id: "01a20106-5a15-738a-9c3b-16c2d95e47cf",
      data: { number: "XXXXXXXXXXXX4242", expiration_month: 12, expiration_year: 2030 },
      fingerprint: "Cx4eJY28-drVnVtArfsZ9IikmWpmnu31rD55soNIzV8",
      created_at: "2026-11-22T02:12:03.987Z",
      metadata: { order: "1987" },
    };
    expect(revealsValue(answer, values)).toBe(false);
    expect(revealsValue({ data: "424242" }, values)).toBe(false);
    expect(revealsValue({ anything: "goes" }, [{ type: "cardExpirationDate", month: 1, year: 2030 }])).toBe(
      false,
    );
  });
});
