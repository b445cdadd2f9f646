import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { isStyle, isStyleValue } from "../src/shared/style.js";
import { maskText, parseMask, textState, validationPattern } from "../src/shared/text.js";

const MASK_CHARS = ["9", "a", "*", "-", " ", "(", ")", "/", ".", "\\9", "\\a"];
const masks = fc
  .array(fc.constantFrom(...MASK_CHARS), { minLength: 1, maxLength: 20 })
  .map((parts) => parts.join(""))
  .filter((mask) => parseMask(mask) !== undefined);

/** Whether `value` is a prefix of some fill of the mask, character by character. */
function fitsMask(value: string, mask: string): boolean {
  const slots = parseMask(mask)!;
  if (value.length > slots.length) return false;
  return [...value].every((char, index) => {
    const slot = slots[index]!;
    return slot.kind === "literal" ? slot.char === char : slot.accepts.test(char);
  });
}

describe("text masks", () => {
  it("parse 9, a and * as slots, backslash as an escape, and refuse masks without a slot", () => {
    expect(parseMask("999-99-9999")?.filter((slot) => slot.kind === "input")).toHaveLength(9);
    expect(parseMask("\\9a")).toEqual([
      { kind: "literal", char: "9" },
      { kind: "input", accepts: /[A-Za-z]/ },
    ]);
    for (const bad of ["", "---", "\\", "abc\\", "9".repeat(65)]) expect(parseMask(bad), bad).toBeUndefined();
  });

  it("keep what is typed within the mask, complete only when every slot is filled, stable when applied again", () => {
    fc.assert(
      fc.property(
        masks,
        fc.oneof(fc.string({ maxLength: 30 }), fc.stringMatching(/^[0-9a-z -]{0,20}$/)),
        (mask, input) => {
          const slots = parseMask(mask)!;
          const { value, complete } = maskText(input, slots);
          expect(fitsMask(value, mask)).toBe(true);
          expect(complete).toBe(value.length === slots.length);
          expect(maskText(value, slots)).toEqual({ value, complete });
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("format an SSN as typed or pasted", () => {
    const ssn = parseMask("999-99-9999")!;
    expect(maskText("123456789", ssn)).toEqual({ value: "123-45-6789", complete: true });
    expect(maskText("123-45-6789", ssn)).toEqual({ value: "123-45-6789", complete: true });
    expect(maskText("12a3", ssn)).toEqual({ value: "123", complete: false });
    expect(maskText("1234", ssn)).toEqual({ value: "123-4", complete: false });
    expect(maskText("(555)", parseMask("(999)")!)).toEqual({ value: "(555)", complete: true });
  });

  it("check a value against its validation, and refuse stateful or oversized patterns", () => {
    const pattern = validationPattern("^[a-z]+$", "i")!;
    expect(textState("Jane", { validation: pattern })).toEqual({
      value: "Jane",
      complete: true,
      valid: true,
    });
    expect(textState("Jane 2", { validation: pattern })).toEqual({
      value: "Jane 2",
      complete: false,
      valid: false,
    });
    expect(textState("", { validation: pattern })).toEqual({ value: "", complete: false, valid: true });
    expect(textState("abcdef", { maxLength: 3 }).value).toBe("abc");
    for (const flags of ["g", "y", "gi", "d", "v"])
      expect(validationPattern("x", flags), flags).toBeUndefined();
    expect(validationPattern("(", "")).toBeUndefined();
    expect(validationPattern("x".repeat(513), "")).toBeUndefined();
  });
});

describe("style allow-list", () => {
  const safeValues = fc
    .stringMatching(/^[A-Za-z0-9#%., '"+-]{0,40}$/)
    .filter((value) => !value.includes("("));

  it("accepts plain values and colour functions", () => {
    fc.assert(
      fc.property(safeValues, (value) => {
        expect(isStyleValue(value)).toBe(true);
      }),
    );
    for (const value of [
      "rgb(1, 2, 3)",
      "rgba(0 0 0 / 50%)",
      "hsl(120, 50%, 50%)",
      "calc(1rem + 2px)",
      "#1a1a1a",
    ]) {
      expect(isStyleValue(value), value).toBe(true);
    }
  });

  it("refuses any value with a fetching function, an escape or a character that could end the declaration", () => {
    fc.assert(
      fc.property(
        safeValues,
        fc.constantFrom(
          "url(x)",
          "URL(x)",
          "image-set(x)",
          "var(--x)",
          "attr(x)",
          "expression(x)",
          "u\\72l(x)",
          ";",
          "{",
          "}",
          ":",
          "<",
          "@",
          "!",
          "\\",
          "\n",
        ),
        safeValues,
        (before, bad, after) => {
          expect(isStyleValue(before + bad + after)).toBe(false);
        },
      ),
    );
  });

  it("accepts only the allowed states, pseudo-classes and properties", () => {
    expect(
      isStyle({ base: { color: "red", ":hover": { color: "blue" }, "::placeholder": { color: "#999" } } }),
    ).toBe(true);
    expect(isStyle({ invalid: { color: "red" }, complete: {}, empty: { fontSize: "12px" } })).toBe(true);
    for (const bad of [
      { base: { background: "url(x)" } },
      { base: { backgroundImage: "none" } },
      { base: { "input[value^='4']": { color: "red" } } },
      { hover: { color: "red" } },
      { base: { ":hover": { ":focus": { color: "red" } } } },
      { base: { color: 1 } },
      [],
      new Map(),
    ]) {
      expect(isStyle(bad), JSON.stringify(bad)).toBe(false);
    }
  });
});
