import { describe, expect, it } from "vitest";
import { normalizeErrors } from "./invoke.js";
import { pathScrubber } from "./scrub.js";

describe("pathScrubber", () => {
  const scrub = pathScrubber(["/opt/tessera", "/var/cache/tessera-reactors"]);

  it.each([
    ["at load (file:///opt/tessera/harness.js:162:77)", "at load (<internal>)"],
    ["Cannot find /var/cache/tessera-reactors/npm/registry", "Cannot find <internal>/npm/registry"],
    ["at ext:deno_node/crypto.ts:1:1499", "at <internal>"],
    ["ENOENT: /etc/passwd", "ENOENT: <internal>"],
  ])("hides host paths in %j", (text, expected) => {
    expect(scrub(text)).toBe(expected);
  });

  it("leaves URLs, ratios and plain text alone", () => {
    const text = "POST https://api.stripe.com/v1/charges failed: 3/4 retries, card declined";
    expect(scrub(text)).toBe(text);
  });
});

describe("normalizeErrors", () => {
  it.each<[unknown, Record<string, string[]>]>([
    ["card expired", { error: ["card expired"] }],
    [["a", { b: 1 }], { error: ["a", '{"b":1}'] }],
    [
      { card: "expired", cvc: ["missing", "short"] },
      { card: ["expired"], cvc: ["missing", "short"] },
    ],
    [
      undefined,
      { error: ["Something went wrong. Please try again. If the problem persists, please contact support."] },
    ],
    [42, { error: ["42"] }],
  ])("normalizes %j as Basis Theory's formulas SDK does", (errors, expected) => {
    expect(normalizeErrors(errors)).toEqual(expected);
  });

  it("keeps a field named __proto__ as data", () => {
    const errors = normalizeErrors(JSON.parse('{"__proto__": "polluted"}'));
    expect(Object.keys(errors)).toEqual(["__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
