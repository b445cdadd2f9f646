import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isJsonValue, JSON_LIMITS } from "../src/shared/json.js";
import {
  isCollect,
  isCollected,
  isConnect,
  isFrameMessage,
  isHello,
  isParentMessage,
  PROTOCOL,
} from "../src/shared/protocol.js";
import type { Check } from "../src/shared/shape.js";

const id = fc.stringMatching(/^[0-9a-f]{32}$/);
const json = fc.jsonValue({ maxDepth: 4 }).filter((value) => !JSON.stringify(value).includes('"__proto__"'));
const segment = fc.oneof(
  fc
    .string({ minLength: 1, maxLength: 20 })
    .filter((s) => !["__proto__", "constructor", "prototype"].includes(s)),
  fc.nat({ max: 99_999 }),
);
const refs = fc.array(
  fc.record({
    path: fc.array(segment, { minLength: 1, maxLength: 6 }),
    element: id,
    part: fc.constantFrom("value", "month", "year"),
  }),
  { maxLength: 5 },
);
const style = fc.record(
  {
    base: fc.record({
      color: fc.constantFrom("red", "#fff", "rgb(0, 0, 0)"),
      ":focus": fc.record({ fontWeight: fc.constant("600") }),
    }),
  },
  { requiredKeys: [] },
);

/** Valid messages of every kind, each with the check that must accept it. */
const valid: fc.Arbitrary<readonly [string, Check<unknown>, Record<string, unknown>]> = fc.oneof(
  id.map((element) => ["hello", isHello, { protocol: PROTOCOL, kind: "hello", element }] as const),
  id.map((element) => ["connect", isConnect, { protocol: PROTOCOL, kind: "connect", element }] as const),
  fc
    .record({
      type: fc.constantFrom("cardNumber", "cardExpirationDate", "cardVerificationCode", "text"),
      key: fc.stringMatching(/^key_pub_[A-Za-z0-9_-]{43}$/),
      options: fc.record(
        {
          label: fc.string({ minLength: 1, maxLength: 50 }),
          placeholder: fc.string({ maxLength: 20 }),
          style,
          disabled: fc.boolean(),
          mask: fc.constant("999-99-9999"),
        },
        { requiredKeys: [] },
      ),
    })
    .map((message) => ["configure", isParentMessage, { kind: "configure", ...message }] as const),
  fc
    .record({ request: id, endpoint: fc.constantFrom("tokenize", "tokens"), body: json, refs })
    .map((message) => ["send", isParentMessage, { kind: "send", ...message }] as const),
  fc
    .record({
      complete: fc.boolean(),
      empty: fc.boolean(),
      valid: fc.boolean(),
      errors: fc.constantFrom([], [{ type: "incomplete" }], [{ type: "invalid" }]),
    })
    .map((message) => ["change", isFrameMessage, { kind: "change", ...message, cardBrand: "visa" }] as const),
  fc
    .record({ request: id, status: fc.integer({ min: 100, max: 599 }), body: json })
    .map((message) => ["result", isFrameMessage, { kind: "result", ...message }] as const),
  fc
    .record({ request: id, elements: fc.array(id, { minLength: 1, maxLength: 4 }) })
    .map((message) => ["collect", isCollect, { protocol: PROTOCOL, kind: "collect", ...message }] as const),
  fc
    .record({ request: id, element: id, value: fc.stringMatching(/^\d{16}$/) })
    .map(
      ({ value, ...message }) =>
        [
          "collected",
          isCollected,
          { protocol: PROTOCOL, kind: "collected", ...message, value: { type: "cardNumber", value } },
        ] as const,
    ),
);

describe("the frame protocol's checks", () => {
  it("accept every well-formed message, and its structured clone", () => {
    fc.assert(
      fc.property(valid, ([name, check, message]) => {
        expect(check(message), name).toBe(true);
        expect(check(structuredClone(message)), name).toBe(true);
      }),
    );
  });

  it("refuse a message with a member more, whatever its name and value", () => {
    fc.assert(
      fc.property(
        valid,
        fc.string({ maxLength: 12 }),
        fc.jsonValue({ maxDepth: 1 }),
        ([name, check, message], key, value) => {
          fc.pre(!(key in message));
          expect(check({ ...message, [key]: value }), name).toBe(false);
        },
      ),
    );
  });

  it("refuse a message with a member less or of another type", () => {
    fc.assert(
      fc.property(valid, fc.nat(), fc.anything(), ([name, check, message], pick, value) => {
        const keys = Object.keys(message);
        const key = keys[pick % keys.length]!;
        const { [key]: _dropped, ...rest } = message;
        // A change event's brand is the one optional member (card number fields only).
        if (key !== "cardBrand") expect(check(rest), `${name} without ${key}`).toBe(false);
        // `body` takes any JSON, so only a value of another type is a wrong one for the other members;
        // an optional member set to undefined is the member left out, which the first check covers.
        fc.pre(key !== "body" && !(key === "cardBrand" && value === undefined));
        fc.pre(typeof value !== typeof message[key] || value === null);
        expect(check({ ...message, [key]: value }), `${name} with ${key}: ${fc.stringify(value)}`).toBe(
          false,
        );
      }),
    );
  });

  it("refuse objects that are not plain, and never throw, whatever arrives", () => {
    fc.assert(
      fc.property(
        fc.anything({
          withMap: true,
          withSet: true,
          withDate: true,
          withTypedArray: true,
          withSparseArray: true,
        }),
        (value) => {
          for (const check of [isHello, isConnect, isParentMessage, isFrameMessage, isCollect, isCollected]) {
            const accepted = check(value);
            if (accepted) expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
          }
        },
      ),
    );
    const hello = { protocol: PROTOCOL, kind: "hello", element: "a".repeat(32) };
    expect(isHello(Object.assign(Object.create({ inherited: true }), hello))).toBe(false);
    expect(isHello(Object.assign(Object.create(null), hello))).toBe(true);
    class Message {
      protocol = PROTOCOL;
      kind = "hello";
      element = "a".repeat(32);
    }
    expect(isHello(new Message())).toBe(false);
    expect(isHello({ ...hello, protocol: "tessera-elements/2" })).toBe(false);
    expect(isHello({ ...hello, element: "A".repeat(32) })).toBe(false);
    expect(isHello({ ...hello, element: "a".repeat(31) })).toBe(false);
  });

  it("refuse refs that reach a prototype, too many refs, and keys a header cannot carry", () => {
    const send = { kind: "send", request: "a".repeat(32), endpoint: "tokens", body: { data: null } };
    const one = (path: unknown[]) => ({ ...send, refs: [{ path, element: "b".repeat(32), part: "value" }] });
    expect(isParentMessage(one(["data"]))).toBe(true);
    for (const path of [["__proto__"], ["data", "constructor"], ["prototype"], [], [-1], [1.5], [""], [{}]]) {
      expect(isParentMessage(one(path)), JSON.stringify(path)).toBe(false);
    }
    expect(isParentMessage(one(Array.from({ length: 33 }, () => "a")))).toBe(false);
    const many = Array.from({ length: 65 }, () => ({
      path: ["data"],
      element: "b".repeat(32),
      part: "value",
    }));
    expect(isParentMessage({ ...send, refs: many })).toBe(false);
    expect(isParentMessage({ ...send, endpoint: "https://elsewhere.example/collect" })).toBe(false);
    const configure = { kind: "configure", type: "cardNumber", options: {} };
    expect(isParentMessage({ ...configure, key: "key_pub_abc" })).toBe(true);
    for (const key of ["", "key pub", "key\npub", "k".repeat(513), "ключ"]) {
      expect(isParentMessage({ ...configure, key }), JSON.stringify(key)).toBe(false);
    }
  });
});

describe("isJsonValue", () => {
  it("accepts JSON", () => {
    fc.assert(
      fc.property(json, (value) => {
        expect(isJsonValue(value)).toBe(true);
      }),
    );
  });

  it("refuses what JSON cannot carry as it is", () => {
    const sparse = [1, , 3]; // eslint-disable-line no-sparse-arrays
    for (const value of [
      undefined,
      NaN,
      Infinity,
      new Date(),
      new Map(),
      () => 1,
      sparse,
      { a: undefined },
      { a: [1n] },
      Symbol("x"),
    ]) {
      expect(isJsonValue(value), typeof value).toBe(false);
    }
    expect(isJsonValue(JSON.parse('{"__proto__": {"polluted": true}}'))).toBe(false);
  });

  it("refuses documents beyond the limits", () => {
    let deep: unknown = null;
    for (let i = 0; i < JSON_LIMITS.depth; i++) deep = [deep];
    expect(isJsonValue(deep)).toBe(true);
    expect(isJsonValue([deep])).toBe(false);
    expect(isJsonValue(Array.from({ length: JSON_LIMITS.nodes }, () => 0))).toBe(false);
    expect(isJsonValue("x".repeat(JSON_LIMITS.stringLength + 1))).toBe(false);
  });
});
