// ASCII digits only: digits of other scripts would break the checksums and the `remove: '-'` fingerprints.
const ONLY_DIGITS = /^[0-9]*$/;
const ZERO = "0".charCodeAt(0);

/** The Luhn (mod 10) check over a string of ASCII digits; anything else, including "", is invalid. */
export function luhnValid(digits: string): boolean {
  if (!ONLY_DIGITS.test(digits) || digits.length === 0) return false;
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    // Counting from the check digit at the right, every second digit is doubled.
    const digit = digits.charCodeAt(digits.length - 1 - i) - ZERO;
    const doubled = digit * 2;
    sum += i % 2 === 0 ? digit : doubled > 9 ? doubled - 9 : doubled;
  }
  return sum % 10 === 0;
}

/**
 * The ABA routing number checksum (weights 3, 7, 1) over exactly nine ASCII digits. wire-format §4.2 asks for
 * the checksum only, so the Federal Reserve prefix ranges are not checked.
 */
export function abaValid(routing: string): boolean {
  if (!/^[0-9]{9}$/.test(routing)) return false;
  const d = (i: number) => routing.charCodeAt(i) - ZERO;
  const sum = 3 * (d(0) + d(3) + d(6)) + 7 * (d(1) + d(4) + d(7)) + (d(2) + d(5) + d(8));
  return sum % 10 === 0;
}
