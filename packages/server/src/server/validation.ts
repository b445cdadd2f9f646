import { Ajv, type Options, type ValidateFunction } from "ajv";
import addFormats from "ajv-formats";
import type { FastifyRequest } from "fastify";
import type { TSchema } from "typebox";
import { addError, type FieldErrors } from "./errors.js";
import { NO_CONTROL_CHARACTERS } from "./schemas.js";

export interface ValidationIssue {
  keyword: string;
  instancePath: string;
  message?: string;
  params: Record<string, unknown>;
}

const COMMON: Options = { allErrors: true, strict: false, useDefaults: true, removeAdditional: false };

/**
 * Bodies are validated strictly (a string is not a number); query strings and paths arrive as text, so they
 * are coerced, and a single `?id=` becomes an array.
 */
export function createAjv(part: "body" | "text"): Ajv {
  return addFormats.default(new Ajv({ ...COMMON, coerceTypes: part === "body" ? false : "array" }));
}

const nestedAjv = createAjv("body");

/**
 * For JSON nested inside a body (each token request of a tokenize call): the same schema and messages as a
 * route body, with field paths prefixed by where the value sits.
 */
export function createValidator<T>(
  schema: TSchema,
): (value: unknown, at: string) => { value: T } | { errors: FieldErrors } {
  const validate: ValidateFunction = nestedAjv.compile(schema);
  return (value, at) => {
    if (validate(value)) return { value: value as T };
    const errors = fieldErrors(validate.errors ?? [], undefined);
    return { errors: prefixErrors(errors, at) };
  };
}

export function prefixErrors(errors: FieldErrors, at: string): FieldErrors {
  if (at === "") return errors;
  return Object.fromEntries(
    Object.entries(errors).map(([field, messages]) => [
      field === "body" ? at : field.startsWith("[") ? `${at}${field}` : `${at}.${field}`,
      messages,
    ]),
  );
}

/** Ajv issues → `{ "rules[0].priority": ["must be ≥ 1"] }`, keyed by the path the client sent. */
export function fieldErrors(issues: readonly ValidationIssue[], context: string | undefined): FieldErrors {
  const errors: FieldErrors = {};
  for (const issue of issues) {
    // Ajv reports a bad property name twice: the specific rule, then a generic wrapper; the first says it all.
    if (issue.keyword === "propertyNames") continue;
    let field = issue.instancePath
      .split("/")
      .slice(1)
      .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"))
      .reduce((acc, part) => (/^\d+$/.test(part) ? `${acc}[${part}]` : acc ? `${acc}.${part}` : part), "");
    const named = issue.params.missingProperty ?? issue.params.additionalProperty;
    if (
      (issue.keyword === "required" || issue.keyword === "additionalProperties") &&
      typeof named === "string"
    ) {
      field = field ? `${field}.${named}` : named;
    }
    const key = field || (context ?? "body");
    addError(errors, key, describe(issue));
  }
  return errors;
}

function describe(issue: ValidationIssue): string {
  const p = issue.params;
  switch (issue.keyword) {
    case "required":
      return "is required";
    case "additionalProperties":
      return "is not a known field";
    case "type":
      return `must be ${article(String(p.type))}`;
    case "enum":
      return `must be one of: ${(p.allowedValues as unknown[]).map(String).join(", ")}`;
    case "minLength":
      return p.limit === 1 ? "must not be empty" : `must be at least ${String(p.limit)} characters`;
    case "maxLength":
      return `must be at most ${String(p.limit)} characters`;
    case "minimum":
      return `must be at least ${String(p.limit)}`;
    case "maximum":
      return `must be at most ${String(p.limit)}`;
    case "minItems":
      return `must have at least ${String(p.limit)} items`;
    case "maxItems":
      return `must have at most ${String(p.limit)} items`;
    case "maxProperties":
      return `must have at most ${String(p.limit)} entries`;
    case "pattern":
      return p.pattern === NO_CONTROL_CHARACTERS
        ? "must not contain control characters"
        : "has an invalid format";
    case "format":
      return `must be a valid ${String(p.format)}`;
    default:
      return issue.message ?? "is invalid";
  }
}

function article(type: string): string {
  const name = type.replace(/,/g, " or ");
  return /^[aeiou]/.test(name) ? `an ${name}` : `a ${name}`;
}

/**
 * A `preValidation` hook for the POSTs whose every body field is optional (searches, react): no body at all is
 * `{}`, as Basis Theory's SDKs assume when they send none. A body that is there is validated as sent.
 */
export async function absentBodyIsEmpty(request: FastifyRequest): Promise<void> {
  if (request.body === undefined) request.body = {};
}
