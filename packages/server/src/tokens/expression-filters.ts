import { randomInt } from "node:crypto";
import { luhnValid } from "../shared/checksums.js";
import { JsonPathError, parseJsonPath, selectJsonPath } from "./json-path.js";

/** The filters of token expressions (wire-format §4.5), as expressions.ts registers them with liquidjs. */

/** Its message is safe to show a client: it names the problem, never token data or an evaluated value. */
export class ExpressionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ExpressionError";
  }
}

/** An integer from 0 to `max` − 1, for the alias filters; node:crypto's randomInt unless a check needs repeatability. */
export type RandomInt = (max: number) => number;

/** Charges intermediate sizes against the memory limit, as liquidjs's own limiter does. */
export interface Charge {
  use(count: number): void;
}

/** Filters need only the memory limiter of liquidjs's context, so plain code can call them too. */
export interface FilterContext {
  readonly memoryLimit: Charge;
  /** Absent for the direct evaluator, whose templates use no alias filter. */
  readonly random?: RandomInt;
}
type Filter = (this: { context: FilterContext }, value: unknown, ...args: unknown[]) => unknown;

function fail(filter: string, problem: string): never {
  throw new ExpressionError(`filter ${filter}: ${problem}`);
}

/** Simple tokens hold strings; numbers (card expiry months, generic tokens) are read as their decimal text. */
function textOf(filter: string, value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  return fail(filter, "expects a string");
}

function countArg(filter: string, name: string, arg: unknown, fallback?: number): number {
  const value = arg ?? fallback;
  const n = typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n === "number" && Number.isSafeInteger(n) && n >= 0) return n;
  return fail(filter, `${name} must be a non-negative integer`);
}

/** BT's examples pass flags as strings (`card_mask: 'true', 'false'`); Liquid's `true`/`false` work too. */
function flagArg(filter: string, name: string, arg: unknown): boolean {
  if (arg === undefined || arg === null || arg === false || arg === "false") return false;
  if (arg === true || arg === "true") return true;
  return fail(filter, `${name} must be true or false`);
}

function charArg(filter: string, name: string, arg: unknown, fallback?: string): string {
  const value = arg ?? fallback;
  if (typeof value === "string" && [...value].length === 1) return value;
  return fail(filter, `${name} must be a single character`);
}

function charsArg(filter: string, name: string, arg: unknown): Set<string> {
  if (arg === undefined || arg === null) return new Set();
  if (typeof arg === "string") return new Set(arg);
  return fail(filter, `${name} must be a string`);
}

/**
 * A filter over text: null and undefined pass through, and the result's size is charged to the memory limit
 * before the work, so a chain of filters over large data stops early.
 */
function onText(
  name: string,
  transform: (text: string, args: unknown[], charge: (n: number) => void, random: RandomInt) => string,
) {
  const filter: Filter = function (value, ...args) {
    if (value === null || value === undefined) return value;
    const { memoryLimit, random = randomInt } = this.context;
    return transform(textOf(name, value), args, (n) => memoryLimit.use(n), random);
  };
  return filter;
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
const DIGITS = "0123456789";
const LOWER = "abcdefghijklmnopqrstuvwxyz";
const UPPER = LOWER.toUpperCase();

/** BT's BIN is 8 digits for numbers of 16 digits or more, else 6 (BT filter docs: card_bin, card_mask). */
function binLength(digits: number): number {
  return digits >= 16 ? 8 : 6;
}

function randomFrom(alphabet: string, random: RandomInt): string {
  return alphabet[random(alphabet.length)] ?? "";
}

/** Same class, random value: letters stay letters of the same case, digits stay digits, the rest is kept. */
function randomLike(char: string, random: RandomInt): string {
  if (/\p{Lu}/u.test(char)) return randomFrom(UPPER, random);
  if (/\p{L}/u.test(char)) return randomFrom(LOWER, random);
  if (/\p{N}/u.test(char)) return randomFrom(DIGITS, random);
  return char;
}

/**
 * Keeps the first `first` and last `last` characters and replaces the others. When they would keep the whole
 * value, nothing is kept: an alias must never be the value itself.
 */
function aliasWith(text: string, first: number, last: number, replace: (char: string) => string): string {
  const chars = [...text];
  const keep = first + last < chars.length;
  return chars.map((c, i) => (keep && (i < first || i >= chars.length - last) ? c : replace(c))).join("");
}

const CARD_EXP_FORMATS = new Set([
  "MM",
  "MMYY",
  "YYYY",
  "YYYY-MM",
  "YYYY/MM",
  "MM/YY",
  "MM/YYYY",
  "MM_YYYY",
  "MM-YYYY",
]);

function expiryPart(card: object, field: string, min: number, max: number): number {
  const raw: unknown = Object.hasOwn(card, field) ? (card as Record<string, unknown>)[field] : undefined;
  const n = typeof raw === "string" && /^\d{1,4}$/.test(raw) ? Number(raw) : raw;
  if (typeof n === "number" && Number.isInteger(n) && n >= min && n <= max) return n;
  return fail("card_exp", `value must be card data with a valid ${field}`);
}

export function toJson(this: { context: { memoryLimit: Charge } }, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  const json = JSON.stringify(value);
  this.context.memoryLimit.use(json.length);
  return json;
}

export const FILTERS: Record<string, Filter> = {
  last4: onText("last4", (text, _args, charge) => {
    charge(4);
    return [...text].slice(-4).join("");
  }),

  /**
   * Masks letters and digits except the last `length` letters and digits; other characters (delimiters) are
   * kept, as in BT's examples: `123-45-6789` → `XXX-XX-6789`, `4242-4242-4242-4242` → `XXXX-XXXX-XXXX-4242`.
   */
  reveal_last: onText("reveal_last", (text, [length, maskChar], charge) => {
    let reveal = countArg("reveal_last", "length", length);
    const mask = charArg("reveal_last", "mask_char", maskChar, "X");
    const chars = [...text];
    charge(chars.length);
    for (let i = chars.length - 1; i >= 0; i--) {
      if (!LETTER_OR_DIGIT.test(chars[i] ?? "")) continue;
      if (reveal > 0) reveal--;
      else chars[i] = mask;
    }
    return chars.join("");
  }),

  /**
   * Keeps the first and last characters (delimiters count as characters) and those in `preserve_chars`. If that
   * keeps everything, everything is masked (BT: `reveal: 10, 9` on a 19-character value is all mask).
   */
  reveal: onText("reveal", (text, [first, last, maskChar, preserveChars], charge) => {
    const head = countArg("reveal", "reveal_first", first, 0);
    const tail = countArg("reveal", "reveal_last", last, 0);
    const mask = charArg("reveal", "mask_char", maskChar, "X");
    const preserve = charsArg("reveal", "preserve_chars", preserveChars);
    const chars = [...text];
    charge(chars.length);
    const allMasked = mask.repeat(chars.length);
    if (head + tail >= chars.length) return allMasked;
    const shown = chars.map((c, i) => (i < head || i >= chars.length - tail || preserve.has(c) ? c : mask));
    const result = shown.join("");
    return result === text ? allMasked : result;
  }),

  /**
   * Characters in `preserve_char` are kept and not counted; every other character is a card position. The BIN
   * (6 or 8 positions) and the last 4 are shown on request; if that shows everything, everything is masked.
   */
  card_mask: onText("card_mask", (text, [revealBin, revealLast4, maskChar, preserveChar], charge) => {
    const bin = flagArg("card_mask", "reveal_bin", revealBin);
    const last4 = flagArg("card_mask", "reveal_last4", revealLast4);
    const mask = charArg("card_mask", "mask_char", maskChar, "X");
    const preserve = charsArg("card_mask", "preserve_char", preserveChar);
    const chars = [...text];
    charge(chars.length);
    const positions = chars.flatMap((c, i) => (preserve.has(c) ? [] : [i]));
    const shown = new Set([
      ...(bin ? positions.slice(0, binLength(positions.length)) : []),
      ...(last4 ? positions.slice(-4) : []),
    ]);
    const masked = (keep: (c: string, i: number) => boolean) =>
      chars.map((c, i) => (keep(c, i) ? c : mask)).join("");
    const result = masked((c, i) => preserve.has(c) || shown.has(i));
    return result === text ? masked((c) => preserve.has(c)) : result;
  }),

  card_bin: onText("card_bin", (text, [separatorChar], charge) => {
    const separator = separatorChar === undefined ? "" : charArg("card_bin", "separator_char", separatorChar);
    const digits = separator === "" ? text : text.split(separator).join("");
    if (!/^\d*$/.test(digits)) fail("card_bin", "value must be digits, with separator_char between groups");
    charge(8);
    return digits.slice(0, binLength(digits.length));
  }),

  card_exp(value, format) {
    if (value === null || value === undefined) return value;
    if (typeof value !== "object" || Array.isArray(value)) fail("card_exp", "expects card data");
    if (typeof format !== "string" || !CARD_EXP_FORMATS.has(format)) {
      fail("card_exp", `format must be one of ${[...CARD_EXP_FORMATS].join(", ")}`);
    }
    const month = expiryPart(value, "expiration_month", 1, 12);
    const year = expiryPart(value, "expiration_year", 0, 9999);
    const yyyy = String(year).padStart(4, "0");
    return format
      .replace("YYYY", yyyy)
      .replace("YY", yyyy.slice(2))
      .replace("MM", String(month).padStart(2, "0"));
  },

  pad_left: onText("pad_left", (text, [length, padChar], charge) => {
    const missing = countArg("pad_left", "length", length) - [...text].length;
    const pad = charArg("pad_left", "pad_char", padChar);
    if (missing <= 0) return text;
    charge(missing + text.length);
    return pad.repeat(missing) + text;
  }),

  pad_right: onText("pad_right", (text, [length, padChar], charge) => {
    const missing = countArg("pad_right", "length", length) - [...text].length;
    const pad = charArg("pad_right", "pad_char", padChar);
    if (missing <= 0) return text;
    charge(missing + text.length);
    return text + pad.repeat(missing);
  }),

  json(value, path) {
    if (value === null || value === undefined) return value;
    if (typeof path !== "string") fail("json", "path must be a string");
    try {
      return selectJsonPath(value, parseJsonPath(path));
    } catch (error) {
      if (error instanceof JsonPathError) fail("json", error.message);
      throw error;
    }
  },

  stringify: toJson,
  json_stringify: toJson,

  to_string(value) {
    if (value === null || value === undefined || typeof value === "string") return value;
    if (typeof value === "number" || typeof value === "boolean") return String(value);
    return fail("to_string", "cannot convert an object or array");
  },

  to_number(value) {
    if (value === null || value === undefined) return value;
    const n =
      typeof value === "string" && /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?\s*$/i.test(value)
        ? Number(value)
        : value;
    if (typeof n === "number" && Number.isFinite(n)) return n;
    return fail("to_number", "value is not a number");
  },

  to_boolean(value) {
    if (value === null || value === undefined || typeof value === "boolean") return value;
    if (value === "true" || value === "false") return value === "true";
    return fail("to_boolean", "value is not true or false");
  },

  alias_preserve_format: onText("alias_preserve_format", (text, [first, last], charge, random) => {
    const head = countArg("alias_preserve_format", "reveal_first", first, 0);
    const tail = countArg("alias_preserve_format", "reveal_last", last, 0);
    charge(text.length);
    return aliasWith(text, head, tail, (c) => randomLike(c, random));
  }),

  /** BT's examples use lower-case letters and digits; every character is replaced, delimiters included. */
  alias_preserve_length: onText("alias_preserve_length", (text, [first, last], charge, random) => {
    const head = countArg("alias_preserve_length", "reveal_first", first, 0);
    const tail = countArg("alias_preserve_length", "reveal_last", last, 0);
    charge(text.length);
    return aliasWith(text, head, tail, () => randomFrom(DIGITS + LOWER, random));
  }),

  /**
   * Random digits in place of the card's digits, spaces and dashes kept; the BIN (6 or 8 digits) and last 4
   * on request. The last random digit is then chosen so that the whole number passes Luhn.
   */
  alias_card: onText("alias_card", (text, [revealBin, revealLast4], charge, random) => {
    const bin = flagArg("alias_card", "reveal_bin", revealBin);
    const last4 = flagArg("alias_card", "reveal_last4", revealLast4);
    if (!/^[\d -]+$/.test(text) || !/\d/.test(text)) fail("alias_card", "value must be a card number");
    charge(text.length);
    const chars = [...text];
    const positions = chars.flatMap((c, i) => (/\d/.test(c) ? [i] : []));
    const kept = new Set([
      ...(bin ? positions.slice(0, binLength(positions.length)) : []),
      ...(last4 ? positions.slice(-4) : []),
    ]);
    const free = positions.filter((p) => !kept.has(p));
    const check = free.pop();
    if (check === undefined)
      fail("alias_card", "the number is too short to reveal its BIN and last 4 digits");
    for (const p of free) chars[p] = randomFrom(DIGITS, random);
    const digitsWith = (d: number) => positions.map((p) => (p === check ? d : Number(chars[p])));
    chars[check] = String([...Array(10).keys()].find((d) => luhnValid(digitsWith(d).join(""))));
    return chars.join("");
  }),
};
