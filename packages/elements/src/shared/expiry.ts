/**
 * The expiration date field: `MM / YY`, a month from 1 to 12, not before the current month, at most
 * {@link MAX_YEARS_AHEAD} years ahead. A card is valid through the last day of its month, so the current month
 * is still accepted.
 */

export const MAX_YEARS_AHEAD = 20;

export interface ExpiryState {
  /** Up to four digits, MMYY. */
  readonly digits: string;
  readonly formatted: string;
  readonly complete: boolean;
  readonly valid: boolean;
  /** Set when complete. */
  readonly month?: number;
  /** Four digits, set when complete. */
  readonly year?: number;
}

/**
 * Reads what the field holds after an edit. A pasted `12/2030` or `1/30` is understood; otherwise digits are
 * taken in order, and a first digit from 2 to 9 is a month of its own (`4` becomes `04`). Typing never adds the
 * separator before the year's first digit, so that a backspace removes a digit rather than a separator.
 */
export function expiryState(input: string, now: Date): ExpiryState {
  const digits = expiryDigits(input);
  const formatted = digits.length <= 2 ? digits : `${digits.slice(0, 2)} / ${digits.slice(2)}`;
  const month = digits.length >= 2 ? Number(digits.slice(0, 2)) : undefined;
  const monthValid = month === undefined || (month >= 1 && month <= 12);
  if (digits.length < 4 || month === undefined) {
    return { digits, formatted, complete: false, valid: monthValid };
  }
  const year = 2000 + Number(digits.slice(2, 4));
  const current = now.getFullYear() * 12 + now.getMonth();
  const given = year * 12 + (month - 1);
  const valid = monthValid && given >= current && year <= now.getFullYear() + MAX_YEARS_AHEAD;
  return valid
    ? { digits, formatted, complete: true, valid: true, month, year }
    : { digits, formatted, complete: false, valid: false };
}

function expiryDigits(input: string): string {
  // A slash separates the month from the year: `1/30`, `12/2030`, and the field's own `12 / 30`.
  const slash = input.indexOf("/");
  if (slash !== -1) {
    const month = input.slice(0, slash).replace(/\D/g, "");
    const year = input.slice(slash + 1).replace(/\D/g, "");
    // A two-digit month from 20 up is read as typed digits are: `2` is a month, `0` the year's first digit.
    if (month.length === 1 || (month.length === 2 && /^[01]/.test(month))) {
      return month.padStart(2, "0") + (year.length === 4 ? year.slice(2) : year.slice(0, 2));
    }
  }
  let digits = input.replace(/\D/g, "");
  if (/^[2-9]/.test(digits)) digits = `0${digits}`;
  return digits.slice(0, 4);
}
