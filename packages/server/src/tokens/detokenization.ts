import { hasControlCharacter } from "../shared/text.js";
import { ExpressionError, type ExpressionEngine } from "./expressions.js";

/**
 * Detokenization expressions as Basis Theory writes them (wire-format §4.5), in POST /detokenize bodies and
 * reactor `args`:
 *
 * - `{{ <id> }}`: the token's data, as the caller's rule shows it;
 * - `{{ token: <id> }}`: the token object, as GET /tokens/{id} would show it to the caller;
 *
 * either followed by filters (`| json: '$.data.number' | last4`), which run on the token expression engine with
 * the value as `data`: the same locked-down liquidjs, filters and limits as masks and search indexes.
 */
export interface DetokenizeExpression {
  /** The text between the braces, as written: what problems quote and evaluations are cached by. */
  readonly text: string;
  readonly id: string;
  readonly form: "data" | "token";
  /** The template the filters run as (`{{ data | … }}`), or undefined when there are none. */
  readonly template?: string;
}

/** Every `{{ … }}` in a string. An expression holds no brace: text with one inside is not an expression. */
export const ANY_EXPRESSION = /\{\{([^{}]*)\}\}/g;
/** A string that is exactly one expression (blank around it allowed) becomes the value itself, JSON type kept. */
export const WHOLE_EXPRESSION = /^\s*\{\{([^{}]*)\}\}\s*$/;

// `token:` then the id, or the id alone; an id is anything up to a blank, a brace or a pipe. Whatever follows
// the id must be filters. Text starting `token:` is always the token form (an id cannot start so here).
const TOKEN_FORM = /^\s*token\s*:/;
const TOKEN_INNER = /^\s*token\s*:\s*([^\s{}|]+)\s*(\|[^]*)?$/;
const DATA_INNER = /^\s*([^\s{}|]+)\s*(\|[^]*)?$/;
/** BT forms Tessera has no counterpart for: named, rather than reported as unknown tokens. */
const UNSUPPORTED_FORM = /^\s*(token_intent)\s*:/;

export const FORMS_HINT =
  "detokenize takes {{ <token id> }} or {{ token: <token id> }}, each optionally | filters";

/**
 * Reads one expression's inner text. Throws ExpressionError whose message completes "{{ … }} <message>"; filters
 * are parsed and checked (known filters, no tags) before any token is read; a variable other than `data` fails
 * when evaluated.
 */
export function parseDetokenizeExpression(text: string, engine: ExpressionEngine): DetokenizeExpression {
  const unsupported = UNSUPPORTED_FORM.exec(text);
  if (unsupported) throw new ExpressionError(`is not supported: Tessera has no ${unsupported[1]}s`);
  const form = TOKEN_FORM.test(text) ? "token" : "data";
  const match = (form === "token" ? TOKEN_INNER : DATA_INNER).exec(text);
  const id = match?.[1];
  if (match === null || id === undefined || hasControlCharacter(text)) {
    throw new ExpressionError(`is not supported: ${FORMS_HINT}`);
  }
  const filters = match[2]?.trim();
  if (filters === undefined) return { text, id, form };
  const template = `{{ data ${filters} }}`;
  try {
    engine.check(template);
  } catch (error) {
    if (error instanceof ExpressionError) throw new ExpressionError(`has invalid filters: ${error.message}`);
    throw error;
  }
  return { text, id, form, template };
}

/** Evaluates a parsed expression against what the caller may see (the data, or the token object). */
export function evaluateDetokenizeExpression(
  expression: DetokenizeExpression,
  value: unknown,
  engine: ExpressionEngine,
): unknown {
  if (expression.template === undefined) return value;
  return engine.evaluate(expression.template, { data: value });
}
