import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CARD_BRANDS } from "../src/shared/brands.js";
import {
  brandProfile,
  cardNumberState,
  cardProfile,
  cvcState,
  formatCardNumber,
  luhnValid,
  maxLength,
} from "../src/shared/card.js";
import { expiryState, MAX_YEARS_AHEAD } from "../src/shared/expiry.js";
import { caretAfter, readField } from "../src/shared/field.js";

const digits = (min: number, max: number) =>
  fc.array(fc.integer({ min: 0, max: 9 }), { minLength: min, maxLength: max }).map((list) => list.join(""));

/** Appends the digit that makes the number pass the Luhn check. */
function withCheckDigit(body: string): string {
  for (let check = 0; check <= 9; check++) if (luhnValid(body + check)) return body + check;
  throw new Error("unreachable");
}

describe("Luhn", () => {
  it("accepts a number with its check digit and refuses every single-digit change of it", () => {
    fc.assert(
      fc.property(digits(11, 18), fc.nat(), fc.integer({ min: 1, max: 9 }), (body, at, delta) => {
        const number = withCheckDigit(body);
        expect(luhnValid(number)).toBe(true);
        const index = at % number.length;
        const changed =
          number.slice(0, index) + ((Number(number[index]) + delta) % 10) + number.slice(index + 1);
        expect(luhnValid(changed)).toBe(false);
      }),
    );
  });

  it("refuses what is not digits", () => {
    for (const text of ["", "4242 4242 4242 4242", "42424242424242a2", "٤٢٤٢"])
      expect(luhnValid(text)).toBe(false);
  });
});

describe("brands", () => {
  it.each([
    ["4242424242424242", "visa", 3],
    ["5555555555554444", "mastercard", 3],
    ["2221000000000009", "mastercard", 3],
    ["378282246310005", "american-express", 4],
    ["6011111111111117", "discover", 3],
    ["36227206271667", "diners-club", 3],
    ["3530111333300000", "jcb", 3],
    ["6200000000000005", "unionpay", 3],
    ["6759649826438453", "maestro", 3],
  ])("%s is %s with a %i-digit code, complete and valid", (number, brand, cvcLength) => {
    const state = cardNumberState(number);
    expect(state.profile.brand).toBe(brand);
    expect(state.profile.cvcLengths).toEqual([cvcLength]);
    expect(state.complete).toBe(true);
    expect(state.valid).toBe(true);
    expect(brandProfile(state.profile.brand).lengths).toEqual(state.profile.lengths);
  });

  it("says unknown while several brands fit and for numbers of no named brand", () => {
    expect(cardProfile("").brand).toBe("unknown");
    expect(cardProfile("5").brand).toBe("unknown");
    expect(cardProfile("1234").brand).toBe("unknown");
    expect(cardProfile("1234").lengths).toEqual([16, 17, 18, 19]);
  });

  it("names only the eight brands, for any digits", () => {
    fc.assert(
      fc.property(digits(0, 19), (number) => {
        expect([...CARD_BRANDS, "unknown"]).toContain(cardProfile(number).brand);
      }),
    );
  });

  it("formats a number at its brand's gaps", () => {
    expect(cardNumberState("4242424242424242").formatted).toBe("4242 4242 4242 4242");
    expect(cardNumberState("378282246310005").formatted).toBe("3782 822463 10005");
    expect(cardNumberState("36227206271667").formatted).toBe("3622 720627 1667");
  });
});

describe("card number field", () => {
  it("keeps digits only, at most the brand's longest length, formatted so that formatting again changes nothing", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 40 }), fc.stringMatching(/^[0-9 -]{0,24}$/)), (input) => {
        const state = cardNumberState(input);
        expect(state.digits).toMatch(/^\d*$/);
        expect(state.digits.length).toBeLessThanOrEqual(maxLength(state.profile));
        expect(state.formatted.replace(/ /g, "")).toBe(state.digits);
        expect(input.replace(/\D/g, "").startsWith(state.digits)).toBe(true);
        expect(cardNumberState(state.formatted).formatted).toBe(state.formatted);
      }),
    );
  });

  it("is complete exactly when a brand length passes the Luhn check, and invalid exactly when one fails it", () => {
    fc.assert(
      fc.property(digits(0, 19), (input) => {
        const state = cardNumberState(input);
        const atLength = state.profile.lengths.includes(state.digits.length);
        expect(state.complete).toBe(atLength && luhnValid(state.digits));
        expect(state.valid).toBe(!atLength || luhnValid(state.digits));
      }),
    );
  });

  it("marks a typo invalid at the first length of its brand, though a Visa number may still grow", () => {
    expect(cardNumberState("4242424242424241")).toMatchObject({ complete: false, valid: false });
    expect(cardNumberState("42424242424242411")).toMatchObject({ complete: false, valid: true });
    expect(cardNumberState("5555555555554445")).toMatchObject({ complete: false, valid: false });
    expect(cardNumberState("378282246310006")).toMatchObject({ complete: false, valid: false });
    fc.assert(
      fc.property(fc.constantFrom("4", "51", "2221", "34", "6011", "35"), digits(14, 16), (prefix, rest) => {
        const number = (prefix + rest).slice(0, 16);
        const state = cardNumberState(number);
        fc.pre(state.profile.lengths.includes(number.length));
        expect(state.valid).toBe(luhnValid(number));
      }),
    );
  });

  it("puts the caret after the digit just typed, whatever spaces formatting adds", () => {
    fc.assert(
      fc.property(digits(1, 16), fc.nat(), (typed, at) => {
        const state = cardNumberState(typed);
        const before = Math.min(at % (typed.length + 1), state.digits.length);
        const caret = caretAfter("cardNumber", state.formatted, before);
        expect(state.formatted.slice(0, caret).replace(/ /g, "")).toBe(state.digits.slice(0, before));
      }),
    );
  });

  it("formats with single spaces only", () => {
    fc.assert(
      fc.property(digits(0, 19), (number) => {
        const formatted = formatCardNumber(number, cardProfile(number));
        expect(formatted).not.toMatch(/ {2}|^ | $/);
      }),
    );
  });
});

describe("verification code field", () => {
  it("is complete at the brand's length, 3 or 4 digits when the brand is unknown", () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 8 }),
        fc.constantFrom(...CARD_BRANDS, "unknown" as const),
        (input, brand) => {
          const state = cvcState(input, brand);
          expect(state.digits).toMatch(/^\d{0,4}$/);
          const expected = brand === "unknown" ? [3, 4] : brand === "american-express" ? [4] : [3];
          expect(state.complete).toBe(expected.includes(state.digits.length));
          expect(state.valid).toBe(state.digits.length <= Math.max(...expected));
        },
      ),
    );
  });
});

describe("expiration date field", () => {
  const now = new Date(2026, 10, 26);

  it("accepts this month through twenty years ahead, and nothing before or after", () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 2000, max: 2099 }), (month, year) => {
        const input = `${String(month).padStart(2, "0")}${String(year % 100).padStart(2, "0")}`;
        const state = expiryState(input, now);
        const months = (year - 2026) * 12 + (month - 11);
        const expected = months >= 0 && year <= 2026 + MAX_YEARS_AHEAD;
        expect(state.complete).toBe(expected);
        expect(state.valid).toBe(expected);
        if (expected) expect({ month: state.month, year: state.year }).toEqual({ month, year });
      }),
    );
  });

  it("formats as MM / YY and reads its own format and pasted forms the same way", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 12 }), fc.stringMatching(/^[0-9/ ]{0,8}$/)), (input) => {
        const state = expiryState(input, now);
        expect(state.digits).toMatch(/^\d{0,4}$/);
        expect(expiryState(state.formatted, now).formatted).toBe(state.formatted);
      }),
      { numRuns: 2000 },
    );
    expect(expiryState("4", now).formatted).toBe("04");
    // A slash after a month from 20 up: the digits are read as typed, and reading the result again changes nothing.
    expect(expiryState("20/", now).formatted).toBe("02 / 0");
    expect(expiryState("02 / 0", now).formatted).toBe("02 / 0");
    expect(expiryState("1230", now).formatted).toBe("12 / 30");
    expect(expiryState("12/2030", now)).toMatchObject({ complete: true, month: 12, year: 2030 });
    expect(expiryState("1/30", now)).toMatchObject({ complete: true, month: 1, year: 2030 });
    expect(expiryState("11/26", now)).toMatchObject({ complete: true, month: 11, year: 2026 });
    expect(expiryState("10/26", now)).toMatchObject({ complete: false, valid: false });
  });

  it("marks an impossible month invalid as soon as it is typed", () => {
    expect(expiryState("13", now).valid).toBe(false);
    expect(expiryState("00", now).valid).toBe(false);
    expect(expiryState("1", now).valid).toBe(true);
  });
});

describe("readField", () => {
  it("reports a value only when complete, and errors that agree with the flags", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("cardNumber", "cardExpirationDate", "cardVerificationCode", "text" as const),
        fc.string({ maxLength: 24 }),
        (type, input) => {
          const reading = readField(input, { type }, new Date(2026, 10, 26));
          expect(reading.value !== undefined).toBe(reading.state.complete);
          expect(reading.state.empty).toBe(reading.shown.length === 0);
          const kinds = reading.state.errors.map((error) => error.type);
          if (!reading.state.valid) expect(kinds).toEqual(["invalid"]);
          else if (!reading.state.empty && !reading.state.complete) expect(kinds).toEqual(["incomplete"]);
          else expect(kinds).toEqual([]);
          expect(reading.state.cardBrand !== undefined).toBe(type === "cardNumber");
        },
      ),
    );
  });
});
