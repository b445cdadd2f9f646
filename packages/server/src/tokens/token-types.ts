import type { FieldErrors } from "../access/rules.js";
import { abaValid, luhnValid } from "../shared/checksums.js";

export const TOKEN_TYPES = [
  "token",
  "card",
  "bank",
  "card_number",
  "social_security_number",
  "employer_id_number",
  "us_bank_account_number",
  "us_bank_routing_number",
] as const;
export type TokenType = (typeof TOKEN_TYPES)[number];

export interface TokenTypeSpec {
  readonly type: TokenType;
  readonly defaultContainer: string;
  /** A Liquid template, e.g. `{{ data | stringify }}`. */
  readonly fingerprintExpression: string;
  /** The default mask expression, or one per field for complex types; undefined means none. */
  readonly mask: string | Readonly<Record<string, string>> | undefined;
  readonly defaultSearchIndexes: readonly string[];
  /** Whether a caller may give `search_indexes` (spec §4.1: token, social_security_number, employer_id_number only). */
  readonly acceptsSearchIndexes: boolean;
  /** Complex types hold a JSON object (card, bank). */
  readonly complex: boolean;
}

const REVEAL_LAST_4 = "{{ data | reveal_last: 4 }}";

// Spec §4.1 Searching Data, 3: the value as given, the value without `-`, and the last four digits.
const DELIMITED_NUMBER_INDEXES = ["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"] as const;

// wire-format §4.2. The SSN and EIN masks keep the delimiters (`XXX-XX-6789`) because reveal_last masks
// characters, not digits.
const SPECS: { readonly [T in TokenType]: TokenTypeSpec & { readonly type: T } } = {
  token: {
    type: "token",
    defaultContainer: "/general/high/",
    fingerprintExpression: "{{ data | stringify }}",
    mask: undefined,
    defaultSearchIndexes: [],
    acceptsSearchIndexes: true,
    complex: false,
  },
  card: {
    type: "card",
    defaultContainer: "/pci/high/",
    fingerprintExpression: "{{ data.number }}",
    mask: {
      number: "{{ data.number | reveal_last: 4 }}",
      expiration_month: "{{ data.expiration_month }}",
      expiration_year: "{{ data.expiration_year }}",
    },
    defaultSearchIndexes: [],
    acceptsSearchIndexes: false,
    complex: true,
  },
  bank: {
    type: "bank",
    defaultContainer: "/bank/high/",
    fingerprintExpression: "{{ data.account_number }}|{{ data.routing_number }}",
    mask: {
      routing_number: "{{ data.routing_number }}",
      account_number: "{{ data.account_number | reveal_last: 4 }}",
    },
    defaultSearchIndexes: [],
    acceptsSearchIndexes: false,
    complex: true,
  },
  card_number: {
    type: "card_number",
    defaultContainer: "/pci/high/",
    fingerprintExpression: "{{ data }}",
    mask: REVEAL_LAST_4,
    defaultSearchIndexes: [],
    acceptsSearchIndexes: false,
    complex: false,
  },
  social_security_number: {
    type: "social_security_number",
    defaultContainer: "/pii/high/",
    fingerprintExpression: "{{ data | remove: '-' }}",
    mask: REVEAL_LAST_4,
    defaultSearchIndexes: DELIMITED_NUMBER_INDEXES,
    acceptsSearchIndexes: true,
    complex: false,
  },
  employer_id_number: {
    type: "employer_id_number",
    defaultContainer: "/pii/high/",
    fingerprintExpression: "{{ data | remove: '-' }}",
    mask: REVEAL_LAST_4,
    defaultSearchIndexes: DELIMITED_NUMBER_INDEXES,
    acceptsSearchIndexes: true,
    complex: false,
  },
  us_bank_account_number: {
    type: "us_bank_account_number",
    defaultContainer: "/bank/high/",
    fingerprintExpression: "{{ data }}",
    mask: REVEAL_LAST_4,
    defaultSearchIndexes: [],
    acceptsSearchIndexes: false,
    complex: false,
  },
  us_bank_routing_number: {
    type: "us_bank_routing_number",
    defaultContainer: "/bank/low/",
    fingerprintExpression: "{{ data }}",
    mask: REVEAL_LAST_4,
    defaultSearchIndexes: [],
    acceptsSearchIndexes: false,
    complex: false,
  },
};

export function tokenTypeSpec(type: TokenType): TokenTypeSpec {
  return SPECS[type];
}

// ASCII digits only: digits of other scripts would break the checksums and the `remove: '-'` fingerprints.
const ONLY_DIGITS = /^[0-9]*$/;

/** A field's problem, if any. Messages state the rule and never quote the value: they may reach logs. */
type Rule = (value: unknown) => string | undefined;

interface Checksum {
  readonly valid: (digits: string) => boolean;
  readonly message: string;
}

/**
 * Digit strings only: no spaces or dashes are stripped, so what a client reads back is what it wrote and a
 * fingerprint of `{{ data }}` has one form per number. JSON numbers are refused because they lose leading
 * zeros and, past 15 digits, precision.
 */
function digitString(min: number, max: number, checksum?: Checksum): Rule {
  const length = min === max ? `must be ${min} digits` : `must be ${min} to ${max} digits`;
  return (value) => {
    if (typeof value !== "string") return "must be a string of digits";
    if (!ONLY_DIGITS.test(value)) return "must contain only digits, without spaces or dashes";
    if (value.length < min || value.length > max) return length;
    if (checksum !== undefined && !checksum.valid(value)) return checksum.message;
    return undefined;
  };
}

/** Integers only: a numeric string such as "03" is refused rather than converted, as the wire type is int. */
function integerIn(min: number, max: number, message: string): Rule {
  return (value) =>
    typeof value === "number" && Number.isInteger(value) && value >= min && value <= max
      ? undefined
      : message;
}

function matching(pattern: RegExp, message: string): Rule {
  return (value) => (typeof value === "string" && pattern.test(value) ? undefined : message);
}

const cardNumber = digitString(13, 19, { valid: luhnValid, message: "fails the Luhn check" });
const routingNumber = digitString(9, 9, {
  valid: abaValid,
  message: "fails the ABA routing number checksum",
});
// wire-format §4.2 gives bank accounts only a maximum; the minimum is us_bank_account_number's, so one account
// is valid whether a client sends it alone or inside a bank object.
const accountNumber = digitString(3, 17);

// Exactly the two written forms; partial delimiters (`123-456789`) are refused as typos. The `{{ data }}` search
// index holds the value as given, so only these two forms find a token by its delimited or bare number. Area,
// group and serial ranges are not checked: ITINs and well-known test numbers fall outside them.
const socialSecurityNumber = matching(
  /^(?:[0-9]{3}-[0-9]{2}-[0-9]{4}|[0-9]{9})$/,
  "must be 9 digits written NNN-NN-NNNN or NNNNNNNNN",
);
// As for SSNs, the IRS campus prefixes are not checked.
const employerIdNumber = matching(
  /^(?:[0-9]{2}-[0-9]{7}|[0-9]{9})$/,
  "must be 9 digits written NN-NNNNNNN or NNNNNNNNN",
);

interface Field {
  readonly required: boolean;
  readonly rule: Rule;
}

interface Shape {
  readonly fields: ReadonlyMap<string, Field>;
  readonly notAnObject: string;
  readonly unknownField: string;
}

const CARD: Shape = {
  fields: new Map([
    ["number", { required: true, rule: cardNumber }],
    ["expiration_month", { required: false, rule: integerIn(1, 12, "must be an integer from 1 to 12") }],
    ["expiration_year", { required: false, rule: integerIn(1000, 9999, "must be a four-digit integer") }],
    // A string, unlike the dates: "012" and "12" are different codes.
    ["cvc", { required: false, rule: digitString(3, 4) }],
  ]),
  notAnObject: "must be an object with number, expiration_month, expiration_year, cvc",
  unknownField: "is not a card field",
};

const BANK: Shape = {
  fields: new Map([
    ["routing_number", { required: true, rule: routingNumber }],
    ["account_number", { required: true, rule: accountNumber }],
  ]),
  notAnObject: "must be an object with routing_number, account_number",
  unknownField: "is not a bank field",
};

/**
 * Validates and normalizes `data` for `type` (wire-format §4.2). Errors are keyed by the field a client sent:
 * "data" for scalar types, "data.number", "data.expiration_month", … for complex ones. Size limits are
 * enforced elsewhere.
 */
export function validateTokenData(
  type: TokenType,
  data: unknown,
): { data: unknown } | { errors: FieldErrors } {
  if (data === undefined || data === null) return { errors: { data: ["is required"] } };
  switch (type) {
    case "token":
      return { data };
    case "card":
      return validateObject(data, CARD);
    case "bank":
      return validateObject(data, BANK);
    case "card_number":
      return validateScalar(data, cardNumber);
    case "social_security_number":
      return validateScalar(data, socialSecurityNumber);
    case "employer_id_number":
      return validateScalar(data, employerIdNumber);
    case "us_bank_account_number":
      return validateScalar(data, accountNumber);
    case "us_bank_routing_number":
      return validateScalar(data, routingNumber);
  }
}

function validateScalar(data: unknown, rule: Rule): { data: unknown } | { errors: FieldErrors } {
  const problem = rule(data);
  return problem === undefined ? { data } : { errors: { data: [problem] } };
}

/**
 * Reports every problem at once. The normalized object holds the known fields in a fixed order and nothing
 * else. An explicit `null` counts as missing for a required field and is refused for an optional one: a PATCH
 * removes fields by merge-patch before validation, so a null here was meant to be stored.
 */
function validateObject(data: unknown, shape: Shape): { data: unknown } | { errors: FieldErrors } {
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return { errors: { data: [shape.notAnObject] } };
  }
  const record = data as Record<string, unknown>;
  const errors: FieldErrors = {};
  const normalized: Record<string, unknown> = {};
  for (const [name, field] of shape.fields) {
    const value = record[name];
    if (field.required && (value === undefined || value === null)) {
      errors[`data.${name}`] = ["is required"];
    } else if (value !== undefined) {
      const problem = field.rule(value);
      if (problem === undefined) normalized[name] = value;
      else errors[`data.${name}`] = [problem];
    }
  }
  for (const name of Object.keys(record)) {
    if (!shape.fields.has(name)) errors[`data.${name}`] = [shape.unknownField];
  }
  return Object.keys(errors).length === 0 ? { data: normalized } : { errors };
}
