import { randomInt } from "node:crypto";
import {
  AssertionError,
  Context,
  LiquidError,
  Liquid,
  Output,
  ParseError,
  TokenizationError,
  TypeGuards,
  UndefinedVariableError,
  toValue,
  toValueSync,
  type Emitter,
  type FS,
  type Template,
} from "liquidjs";
import { JsonPathError, parseJsonPath, selectJsonPath } from "./json-path.js";

const REVEALING_FILTERS = ["base64_encode", "base64_decode", "sha256", "hmac_sha256", "url_decode"] as const;

/** The message of an evaluation stopped by the renderer's time limit: the host's load as much as the template. */
export const TOOK_TOO_LONG = "took too long";

/** Its message is safe to show a client: it names the problem, never token data or an evaluated value. */
export class ExpressionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ExpressionError";
  }
}

export interface ExpressionScope {
  readonly data: unknown;
  readonly metadata?: Readonly<Record<string, string>>;
}

/** An integer from 0 to `max` − 1, for the alias filters; node:crypto's randomInt unless a check needs repeatability. */
export type RandomInt = (max: number) => number;

export interface EvaluateOptions {
  /**
   * Where the alias filters draw their random characters from. A check that compares outputs over changed data
   * (card-mask.ts) passes a fixed sequence, so that only the data can make two outputs differ.
   */
  readonly random?: RandomInt;
}

export interface ExpressionEngine {
  /**
   * Parses and checks a template without data: plain text and `{{ … }}` outputs only, known filters only, and
   * only `data` and `metadata` at the root. Throws ExpressionError. Outcomes are cached by template text (LRU).
   */
  check(template: string): void;
  /**
   * Evaluates against `scope`. A template that is exactly one output (surrounding whitespace allowed) yields the
   * raw value after filters; any other template yields the rendered string. Throws ExpressionError.
   */
  evaluate(template: string, scope: ExpressionScope, options?: EvaluateOptions): unknown;
}

export interface ExpressionLimits {
  readonly maxTemplateLength?: number;
  readonly maxOutputLength?: number;
  readonly renderTimeLimitMs?: number;
}

const CACHE_SIZE = 1000;
/** Intermediate values (appends, splits, pads) may exceed the output a little, never without bound. */
const MEMORY_PER_OUTPUT_CHAR = 16;
const ROOT_VARIABLES = new Set(["data", "metadata"]);
/** BT's rule: stringify serializes the final value, so nothing may follow it. */
const FINAL_FILTERS = new Set(["stringify", "json_stringify"]);

interface Compiled {
  readonly templates: Template[];
  /** Set when the template is one output tag: its value is returned as is, not rendered to text. */
  readonly single?: Output;
  /** Set when the template has the narrow shape `directEvaluator` evaluates without liquidjs. */
  readonly direct?: Direct;
}

/** Charges intermediate sizes against the memory limit, as liquidjs's own limiter does. */
interface Charge {
  use(count: number): void;
}

/** Answers the template's value, or FALLBACK when the data is anything the plain code does not cover. */
type Direct = (scope: ExpressionScope, memoryLimit: Charge) => unknown;
const FALLBACK = Symbol("evaluate through liquidjs");

/**
 * Token expressions (spec §4.1, wire-format §4.5) on liquidjs, locked down (DESIGN §1): every tag is
 * unregistered (no include/render/layout, so no file system, and no loops or assignments), filters and
 * variables are strict, lookups see own properties only, and parse length, memory and time are bounded.
 */
export function createExpressionEngine(limits: ExpressionLimits = {}): ExpressionEngine {
  const maxTemplateLength = limits.maxTemplateLength ?? 4096;
  const maxOutputLength = limits.maxOutputLength ?? 65536;
  const renderTimeLimitMs = limits.renderTimeLimitMs ?? 100;
  const liquid = new Liquid({
    fs: NO_FILES,
    relativeReference: false,
    strictFilters: true,
    strictVariables: true,
    ownPropertyOnly: true,
    parseLimit: maxTemplateLength,
    renderLimit: renderTimeLimitMs,
    memoryLimit: maxOutputLength * MEMORY_PER_OUTPUT_CHAR,
  });
  for (const name of Object.keys(liquid.tags)) delete liquid.tags[name];
  // The *_exp filters compile expression text at render time (possibly text taken from token data), out of
  // reach of check().
  for (const name of Object.keys(liquid.filters)) if (name.endsWith("_exp")) liquid.unregisterFilter(name);
  // Reversible encodings and unkeyed hashes turn a mask or an alias id into a copy of the data (a SHA-256 of
  // an SSN is brute-forced in seconds), so they are not offered.
  for (const name of REVEALING_FILTERS) liquid.unregisterFilter(name);
  for (const [name, filter] of Object.entries(FILTERS)) liquid.registerFilter(name, filter);

  const cache = new Map<string, Compiled | ExpressionError>();
  const compile = (template: string): Compiled => {
    if (template.length > maxTemplateLength) {
      throw new ExpressionError(`template too long (at most ${maxTemplateLength} characters)`);
    }
    let entry = cache.get(template);
    if (entry === undefined) {
      try {
        entry = compileChecked(liquid, template);
      } catch (error) {
        entry = parseFailure(error);
      }
      if (cache.size >= CACHE_SIZE) cache.delete(cache.keys().next().value as string);
    } else {
      cache.delete(template);
    }
    cache.set(template, entry);
    if (entry instanceof ExpressionError) throw new ExpressionError(entry.message);
    return entry;
  };

  /**
   * The same limits as a liquidjs render for memory and output size. Not time: the built-in expressions are fixed
   * code over data of bounded size, so a clock check would only fail a valid request when the host is busy (a
   * process descheduled for 100 ms answered 400 "took too long" for a `remove: '-'`).
   */
  function evaluateDirect(direct: Direct, scope: ExpressionScope, template: string): unknown {
    // The direct shapes use no alias filter, so they never draw random numbers.
    const memory = maxOutputLength * MEMORY_PER_OUTPUT_CHAR;
    let used = 0;
    const memoryLimit: Charge = {
      use(count) {
        if (count > 0 && (used += count) > memory) throw outputTooLarge();
      },
    };
    try {
      const result = direct(scope, memoryLimit);
      if (result === FALLBACK) return result;
      if ((JSON.stringify(result)?.length ?? 0) > maxOutputLength) throw outputTooLarge();
      return result;
    } catch (error) {
      throw renderFailure(error, template);
    }
  }

  return {
    check(template) {
      compile(template);
    },
    evaluate(template, scope, options = {}) {
      const { templates, single, direct } = compile(template);
      if (direct !== undefined) {
        const value = evaluateDirect(direct, scope, template);
        if (value !== FALLBACK) return value;
      }
      const ctx = new TokenContext(
        Object.assign(Object.create(null) as object, scope),
        liquid.options,
        { sync: true },
        { liquid },
      );
      ctx.random = options.random ?? randomInt;
      try {
        let result: unknown;
        if (single) {
          result = toValue(toValueSync(single.value.value(ctx)));
          if ((JSON.stringify(result)?.length ?? 0) > maxOutputLength) throw outputTooLarge();
        } else {
          const emitter = new TextEmitter(maxOutputLength);
          toValueSync(liquid.renderer.renderTemplates(templates, ctx, emitter));
          result = emitter.buffer;
        }
        // liquidjs checks the deadline between top-level templates only; check it once more at the end.
        ctx.renderLimit.check(performance.now());
        return result;
      } catch (error) {
        throw renderFailure(error, template);
      }
    },
  };
}

/**
 * The built-in defaults (token-types.ts) run on every create, and masks on every masked read; through liquidjs
 * each costs ~20 µs, most of it setting up a render context. Templates of exactly this shape — one output, `data`
 * or one property of it, at most one of these deterministic filters — are evaluated by plain code instead, and
 * anything unusual in the data (a missing property, a string's `size`, an array) falls back to liquidjs.
 * expressions.test.ts proves both give the same value or the same error.
 */
const DIRECT_TEMPLATE =
  /^\{\{ data(?:\.([a-z_]+))?(?: \| (?:(stringify|json_stringify|last4)|reveal_last: (\d{1,4})|remove: '(-)'))? \}\}$/;

function directEvaluator(template: string): Direct | undefined {
  const match = DIRECT_TEMPLATE.exec(template);
  if (match === null) return undefined;
  const [, property, plainFilter, revealLength, removed] = match;
  const lookup = (data: unknown): unknown => {
    if (property === undefined) return data;
    if (typeof data !== "object" || data === null || Array.isArray(data) || !Object.hasOwn(data, property)) {
      return undefined;
    }
    return (data as Record<string, unknown>)[property];
  };
  return (scope, memoryLimit) => {
    const value = lookup(scope.data);
    if (value === undefined) return FALLBACK;
    const self = { context: { memoryLimit } };
    if (plainFilter !== undefined) return FILTERS[plainFilter]!.call(self, value);
    if (revealLength !== undefined) return FILTERS.reveal_last!.call(self, value, Number(revealLength));
    if (removed !== undefined) {
      if (typeof value !== "string") return FALLBACK;
      memoryLimit.use(value.length + removed.length);
      return value.split(removed).join("");
    }
    return value;
  };
}

function compileChecked(liquid: Liquid, template: string): Compiled {
  const templates = liquid.parse(template);
  for (const [root] of liquid.globalVariableSegmentsSync(templates)) {
    if (!ROOT_VARIABLES.has(String(root))) throw new ExpressionError(`unknown variable '${String(root)}'`);
  }
  const outputs = templates.filter((t): t is Output => t instanceof Output);
  for (const output of outputs) {
    const names = output.value.filters.map((f) => f.name);
    const misplaced = names.slice(0, -1).find((name) => FINAL_FILTERS.has(name));
    if (misplaced) throw new ExpressionError(`filter ${misplaced} must be the last filter`);
  }
  const [only] = outputs;
  const blankAround = templates.every((t) => t === only || t.token.getText().trim() === "");
  if (!(only && outputs.length === 1 && blankAround)) return { templates };
  const direct = directEvaluator(template);
  return direct === undefined ? { templates, single: only } : { templates, single: only, direct };
}

/** Parse errors come before any data is seen, so liquidjs's account of the problem can be passed on. */
function parseFailure(error: unknown): ExpressionError {
  if (error instanceof ExpressionError) return error;
  if (!(error instanceof ParseError || error instanceof TokenizationError)) {
    return new ExpressionError("the template could not be parsed");
  }
  if (TypeGuards.isTagToken(error.token)) {
    return new ExpressionError(
      `tags are not allowed, only {{ … }} outputs: '${error.token.name}' at offset ${error.token.begin}`,
    );
  }
  const unknownFilter = /^undefined filter: (.*)$/.exec(error.originalError?.message ?? "");
  if (unknownFilter) return new ExpressionError(`unknown filter '${unknownFilter[1]}'`);
  const problem = error.message.replace(/, line:\d+, col:\d+$/, "");
  return new ExpressionError(`syntax error at offset ${error.token.begin}: ${problem}`);
}

/**
 * Render errors may quote evaluated values: liquidjs names a computed key (`data[data.number]`) by its value,
 * and `where: data.k` parses a property path taken from the data. Only our own messages, the limits and
 * tokens of the template text itself are shown.
 */
function renderFailure(error: unknown, template: string): ExpressionError {
  const cause = error instanceof LiquidError ? (error.originalError ?? error) : error;
  if (cause instanceof ExpressionError) return cause;
  if (cause instanceof AssertionError && cause.message === "memory alloc limit exceeded")
    return outputTooLarge();
  if (cause instanceof AssertionError && cause.message === "template render limit exceeded") {
    return new ExpressionError(TOOK_TOO_LONG);
  }
  if (error instanceof UndefinedVariableError) {
    const fromTemplate = error.token.input === template;
    return new ExpressionError(
      fromTemplate ? `unknown variable '${error.token.getText()}'` : "unknown variable",
    );
  }
  return new ExpressionError("the expression could not be evaluated");
}

function outputTooLarge(): ExpressionError {
  return new ExpressionError("output too large");
}

const NO_FILES: FS = {
  exists: () => Promise.resolve(false),
  existsSync: () => false,
  readFile: () => Promise.reject(new Error("expressions cannot read files")),
  readFileSync: () => {
    throw new Error("expressions cannot read files");
  },
  resolve: (_dir, file) => file,
};

/** Token data is JSON: a string has no properties but Liquid's `size` (liquidjs would index it, `data[0]`). */
class TokenContext extends Context {
  random: RandomInt = randomInt;

  override readProperty(
    obj: Parameters<Context["readProperty"]>[0],
    key: Parameters<Context["readProperty"]>[1],
  ) {
    if (typeof obj === "string" && key !== "size") return undefined;
    return super.readProperty(obj, key) as unknown;
  }
}

/** Renders complex values as JSON text (DESIGN §6) and stops as soon as the text outgrows the limit. */
class TextEmitter implements Emitter {
  buffer = "";
  constructor(private readonly maxLength: number) {}
  write(value: unknown): void {
    this.buffer += toText(toValue(value));
    if (this.buffer.length > this.maxLength) throw outputTooLarge();
  }
}

function toText(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  return value === null || value === undefined ? "" : (JSON.stringify(value) ?? "");
}

// ---- filters (wire-format §4.5) ----

/** Filters need only the memory limiter of liquidjs's context, so plain code can call them too. */
interface FilterContext {
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

function luhnValid(digits: readonly number[]): boolean {
  return luhnSum(digits) % 10 === 0;
}

function luhnSum(digits: readonly number[]): number {
  return digits.reduce((sum, d, i) => sum + luhnWeight(d, (digits.length - 1 - i) % 2 === 1), 0);
}

function luhnWeight(digit: number, doubled: boolean): number {
  if (!doubled) return digit;
  return digit * 2 > 9 ? digit * 2 - 9 : digit * 2;
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

function toJson(this: { context: { memoryLimit: Charge } }, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  const json = JSON.stringify(value);
  this.context.memoryLimit.use(json.length);
  return json;
}

const FILTERS: Record<string, Filter> = {
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
    chars[check] = String([...Array(10).keys()].find((d) => luhnValid(digitsWith(d))));
    return chars.join("");
  }),
};
