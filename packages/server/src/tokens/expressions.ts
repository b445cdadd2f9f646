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
import { ExpressionError, FILTERS, type Charge, type RandomInt } from "./expression-filters.js";

export { ExpressionError, type RandomInt };

const REVEALING_FILTERS = ["base64_encode", "base64_decode", "sha256", "hmac_sha256", "url_decode"] as const;

/** The message of an evaluation stopped by the renderer's time limit: the host's load as much as the template. */
export const TOOK_TOO_LONG = "took too long";

export interface ExpressionScope {
  readonly data: unknown;
  readonly metadata?: Readonly<Record<string, string>>;
}

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
