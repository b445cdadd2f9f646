// The search benchmark's corpus: a deterministic mix of token types, containers and metadata, every value valid
// for its type, so that one seed and one size always give the same vault. Pure: no I/O, no clock.
import type { CreateTokenInput } from "../../packages/server/src/tokens/draft.js";
import type { TokenType } from "../../packages/server/src/tokens/token-types.js";

const REGIONS = ["eu", "us", "apac", "latam", "mea"] as const;
const TIERS = ["gold", "silver", "bronze"] as const;
/** Percent of the corpus per type (issue 4, item 6). */
const TYPE_MIX: readonly (readonly [TokenType, number])[] = [
  ["token", 30],
  ["social_security_number", 20],
  ["card_number", 10],
  ["card", 5],
  ["employer_id_number", 10],
  ["bank", 10],
  ["us_bank_account_number", 10],
  ["us_bank_routing_number", 5],
];
const CUSTOMER_CONTAINER_PERCENT = 10;
const EXPIRING_PERCENT = 2;
/** About this many tokens share one customer_id. */
const TOKENS_PER_CUSTOMER = 10;
/** customer_id is `cust-` and six digits. */
export const MAX_TOKENS = TOKENS_PER_CUSTOMER * 1_000_000;
// Far beyond any benchmark run, so that no seeded token expires (and is swept) while it is being searched.
const EXPIRY_FROM = Date.UTC(2030, 0, 1);
const EXPIRY_SPAN_MS = 5 * 365 * 86_400_000;

/** mulberry32: tiny, fast and good enough to spread a corpus; not for anything secret. */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NINE_DIGITS = 1_000_000_000;

/**
 * An affine bijection on 0..10⁹-1 (the multiplier is odd and not a multiple of 5), so the i-th SSN or EIN is
 * unique by construction and a `data:` search for one finds exactly one token. Products stay below 2⁵³ for
 * every index up to MAX_TOKENS.
 */
function nineDigits(index: number, multiplier: number, offset: number): string {
  return String((index * multiplier + offset) % NINE_DIGITS).padStart(9, "0");
}

function luhnCheckDigit(body: string): number {
  let sum = 0;
  for (let i = 0; i < body.length; i++) {
    // The check digit will sit to the right, so the body's rightmost digit is the first one doubled.
    const digit = body.charCodeAt(body.length - 1 - i) - 48;
    const doubled = digit * 2;
    sum += i % 2 === 0 ? (doubled > 9 ? doubled - 9 : doubled) : digit;
  }
  return (10 - (sum % 10)) % 10;
}

export interface CorpusToken {
  readonly input: CreateTokenInput & { readonly type: TokenType };
  /** The number in the token's customer_id, 0 to `customers` - 1. */
  readonly customer: number;
}

export function customerIdOf(customer: number): string {
  return `cust-${String(customer).padStart(6, "0")}`;
}

/** Draws the tokens of one corpus in order; `next(i)` must be called for i = 0, 1, 2, … */
export function corpus(seed: number, size: number) {
  if (!Number.isSafeInteger(size) || size < 1 || size > MAX_TOKENS) {
    throw new Error(`the corpus holds 1 to ${MAX_TOKENS} tokens`);
  }
  const random = prng(seed);
  const customers = Math.max(1, Math.round(size / TOKENS_PER_CUSTOMER));
  const integer = (below: number) => Math.floor(random() * below);
  const pick = <T>(values: readonly T[]): T => values[integer(values.length)]!;
  const digits = (count: number) => {
    let text = "";
    for (let i = 0; i < count; i++) text += String(integer(10));
    return text;
  };
  const cardNumber = () => {
    // Visa, Mastercard and Amex shapes, so masks and last-four indexes see varied lengths.
    const [prefix, length] = pick([
      ["4", 16],
      ["51", 16],
      ["55", 16],
      ["37", 15],
    ] as const);
    const body = prefix + digits(length - prefix.length - 1);
    return body + String(luhnCheckDigit(body));
  };
  const routingNumber = () => {
    const d = [...digits(8)].map(Number) as [number, number, number, number, number, number, number, number];
    const partial = 3 * (d[0] + d[3] + d[6]) + 7 * (d[1] + d[4] + d[7]) + (d[2] + d[5]);
    return d.join("") + String((10 - (partial % 10)) % 10);
  };
  const accountNumber = () => digits(8 + integer(5));

  function data(type: TokenType, index: number): unknown {
    switch (type) {
      case "token":
        return `user-${index}@example.com`;
      case "social_security_number": {
        const n = nineDigits(index, 387_420_489, 123_456_789);
        return `${n.slice(0, 3)}-${n.slice(3, 5)}-${n.slice(5)}`;
      }
      case "employer_id_number": {
        const n = nineDigits(index, 282_475_249, 987_654_321);
        return `${n.slice(0, 2)}-${n.slice(2)}`;
      }
      case "card_number":
        return cardNumber();
      case "card":
        return {
          number: cardNumber(),
          expiration_month: 1 + integer(12),
          expiration_year: 2027 + integer(6),
          cvc: digits(3),
        };
      case "bank":
        return { routing_number: routingNumber(), account_number: accountNumber() };
      case "us_bank_account_number":
        return accountNumber();
      case "us_bank_routing_number":
        return routingNumber();
    }
  }

  function type(): TokenType {
    let roll = integer(100);
    for (const [candidate, percent] of TYPE_MIX) {
      if (roll < percent) return candidate;
      roll -= percent;
    }
    throw new Error("TYPE_MIX must add up to 100");
  }

  return {
    customers,
    next(index: number): CorpusToken {
      const tokenType = type();
      const region = pick(REGIONS);
      const customer = integer(customers);
      const metadata = { region, customer_id: customerIdOf(customer), tier: pick(TIERS) };
      const inCustomerContainer = integer(100) < CUSTOMER_CONTAINER_PERCENT;
      const expiring = integer(100) < EXPIRING_PERCENT;
      const input: CorpusToken["input"] = {
        type: tokenType,
        data: data(tokenType, index),
        metadata,
        ...(tokenType === "token" && { searchIndexes: ["{{ data }}"] }),
        ...(inCustomerContainer && { containers: [`/customers/${region}/`] }),
        ...(expiring && {
          expiresAt: new Date(EXPIRY_FROM + integer(EXPIRY_SPAN_MS)).toISOString(),
        }),
      };
      return { input, customer };
    },
  };
}
