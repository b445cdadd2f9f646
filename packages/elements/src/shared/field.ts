import type { CardBrand, FieldError } from "./brands.js";
import { cardNumberState, cvcState } from "./card.js";
import { expiryState } from "./expiry.js";
import type { ElementType, FieldValue } from "./protocol.js";
import { textState, type Slot } from "./text.js";

/** What a field of one type needs to read its input, beyond the input itself. */
export interface FieldRules {
  readonly type: ElementType;
  /** A verification-code field's brand, as its page last said. */
  readonly cardBrand?: CardBrand;
  readonly mask?: readonly Slot[];
  readonly validation?: RegExp;
  readonly maxLength?: number;
}

/** The state a page is told about: nothing in it depends on the value beyond these flags and the brand. */
export interface PublicState {
  readonly complete: boolean;
  readonly empty: boolean;
  readonly valid: boolean;
  readonly errors: readonly FieldError[];
  readonly cardBrand?: CardBrand;
}

export interface Reading {
  /** What the field shows: the input formatted. */
  readonly shown: string;
  readonly state: PublicState;
  /** Present only when complete: what a request may carry. */
  readonly value?: FieldValue;
}

/** Which characters of what is shown carry the value (the rest is formatting), to keep the caret in place. */
export function isSignificant(type: ElementType, char: string): boolean {
  return type === "text" ? /[\p{L}\p{N}]/u.test(char) : /\d/.test(char);
}

/** Reads a field's input: formatting, validity, completeness, and the value once complete. */
export function readField(input: string, rules: FieldRules, now: Date): Reading {
  switch (rules.type) {
    case "cardNumber": {
      const card = cardNumberState(input);
      return reading(card.formatted, card.complete, card.valid, card.profile.brand, {
        type: "cardNumber",
        value: card.digits,
      });
    }
    case "cardExpirationDate": {
      const expiry = expiryState(input, now);
      return reading(
        expiry.formatted,
        expiry.complete,
        expiry.valid,
        undefined,
        expiry.month === undefined || expiry.year === undefined
          ? undefined
          : { type: "cardExpirationDate", month: expiry.month, year: expiry.year },
      );
    }
    case "cardVerificationCode": {
      const cvc = cvcState(input, rules.cardBrand ?? "unknown");
      return reading(cvc.digits, cvc.complete, cvc.valid, undefined, {
        type: "cardVerificationCode",
        value: cvc.digits,
      });
    }
    case "text": {
      const text = textState(input, rules);
      return reading(text.value, text.complete, text.valid, undefined, { type: "text", value: text.value });
    }
  }
}

function reading(
  shown: string,
  complete: boolean,
  valid: boolean,
  cardBrand: CardBrand | undefined,
  value: FieldValue | undefined,
): Reading {
  const empty = shown.length === 0;
  const errors: FieldError[] = !valid
    ? [{ type: "invalid" }]
    : !empty && !complete
      ? [{ type: "incomplete" }]
      : [];
  const state: PublicState = {
    complete,
    empty,
    valid,
    errors,
    ...(cardBrand !== undefined && { cardBrand }),
  };
  return complete && value !== undefined ? { shown, state, value } : { shown, state };
}

/** Two states a page would see as the same change event. */
export function sameState(a: PublicState, b: PublicState): boolean {
  return (
    a.complete === b.complete &&
    a.empty === b.empty &&
    a.valid === b.valid &&
    a.cardBrand === b.cardBrand &&
    a.errors.map((error) => error.type).join() === b.errors.map((error) => error.type).join()
  );
}

/**
 * Where the caret goes after formatting: after as many significant characters as stood before it, so that a
 * space added at a gap does not push the caret behind the digit just typed.
 */
export function caretAfter(type: ElementType, shown: string, significantBefore: number): number {
  if (significantBefore === 0) return 0;
  let seen = 0;
  for (let index = 0; index < shown.length; index++) {
    if (isSignificant(type, shown[index]!) && ++seen === significantBefore) return index + 1;
  }
  return shown.length;
}
