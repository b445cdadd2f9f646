import creditCardType from "credit-card-type";
import { CARD_BRANDS, type CardBrand } from "./brands.js";

/**
 * Card number rules: the brand from its IIN (Braintree's credit-card-type keeps the ranges), the lengths and digit
 * groups of that brand, the Luhn check. Pure, so that the frame and the tests share exactly this code.
 */

export interface CardProfile {
  readonly brand: CardBrand;
  /** The lengths a number of this brand may have, ascending. */
  readonly lengths: readonly number[];
  /** Digit counts after which a space is shown. */
  readonly gaps: readonly number[];
  /** The lengths of its verification code. */
  readonly cvcLengths: readonly number[];
}

/** The vault accepts 13 to 19 digits (ISO/IEC 7812); a number of no known brand is held to the common 16 to 19. */
const UNKNOWN: CardProfile = {
  brand: "unknown",
  lengths: [16, 17, 18, 19],
  gaps: [4, 8, 12],
  cvcLengths: [3, 4],
};

const BRAND_SET: ReadonlySet<string> = new Set(CARD_BRANDS);

function isBrand(value: string): value is (typeof CARD_BRANDS)[number] {
  return BRAND_SET.has(value);
}

/**
 * The profile of the digits typed so far. While several of the eight brands still fit (a lone `5` is Mastercard or
 * Maestro), the brand is `unknown` and the number may grow to the longest length any of them allows.
 */
export function cardProfile(digits: string): CardProfile {
  const matches = digits.length === 0 ? [] : creditCardType(digits).filter((match) => isBrand(match.type));
  const only = matches.length === 1 ? matches[0] : undefined;
  if (only !== undefined && isBrand(only.type)) {
    return {
      brand: only.type,
      lengths: [...only.lengths].sort((a, b) => a - b),
      gaps: only.gaps,
      cvcLengths: [only.code.size],
    };
  }
  if (matches.length > 1) {
    const lengths = [...new Set(matches.flatMap((match) => match.lengths))].sort((a, b) => a - b);
    return { ...UNKNOWN, lengths };
  }
  return UNKNOWN;
}

/** The profile of a brand by name, for a verification-code field told the brand by its page. */
export function brandProfile(brand: CardBrand): CardProfile {
  if (brand === "unknown") return UNKNOWN;
  const info = creditCardType.getTypeInfo(brand);
  return {
    brand,
    lengths: [...info.lengths].sort((a, b) => a - b),
    gaps: info.gaps,
    cvcLengths: [info.code.size],
  };
}

export function luhnValid(digits: string): boolean {
  if (!/^\d+$/.test(digits)) return false;
  let sum = 0;
  for (let index = 0; index < digits.length; index++) {
    let digit = digits.charCodeAt(digits.length - 1 - index) - 48;
    if (index % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

export function maxLength(profile: CardProfile): number {
  return profile.lengths[profile.lengths.length - 1] ?? 19;
}

/** Groups digits with single spaces at the brand's gaps: `4242 4242 4242 4242`, `3782 822463 10005`. */
export function formatCardNumber(digits: string, profile: CardProfile): string {
  let out = "";
  for (let index = 0; index < digits.length; index++) {
    if (index > 0 && profile.gaps.includes(index)) out += " ";
    out += digits[index];
  }
  return out;
}

export interface CardNumberState {
  /** The digits, at most the brand's longest length. */
  readonly digits: string;
  readonly formatted: string;
  readonly profile: CardProfile;
  readonly complete: boolean;
  /**
   * `false` when the digits have a length of the brand and fail the Luhn check. Typing on can make them valid
   * again (a Visa number may have 16, 18 or 19 digits), but a typo shows at once rather than on the last digit.
   */
  readonly valid: boolean;
}

/** What a card number field holds after any edit: non-digits dropped, cut to the brand's longest length. */
export function cardNumberState(input: string): CardNumberState {
  let digits = input.replace(/\D/g, "");
  let profile = cardProfile(digits);
  // Cutting can change the brand's candidates (a 20th digit), so the profile is taken again from what is kept.
  if (digits.length > maxLength(profile)) {
    digits = digits.slice(0, maxLength(profile));
    profile = cardProfile(digits);
  }
  const luhn = luhnValid(digits);
  const complete = profile.lengths.includes(digits.length) && luhn;
  const valid = !profile.lengths.includes(digits.length) || luhn;
  return { digits, formatted: formatCardNumber(digits, profile), profile, complete, valid };
}

export interface CvcState {
  readonly digits: string;
  readonly complete: boolean;
  readonly valid: boolean;
}

/** A verification code: digits only, at most 4; of the brand's length when the brand is known. */
export function cvcState(input: string, brand: CardBrand): CvcState {
  const digits = input.replace(/\D/g, "").slice(0, 4);
  const lengths = brandProfile(brand).cvcLengths;
  const longest = Math.max(...lengths);
  return {
    digits,
    complete: lengths.includes(digits.length),
    // Four digits typed under an unknown brand, then told the brand is Visa: too long, not silently cut.
    valid: digits.length <= longest,
  };
}
