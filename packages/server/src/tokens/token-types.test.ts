import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { containerProblem, type FieldErrors } from "../access/rules.js";
import { abaValid, luhnValid } from "../shared/checksums.js";
import { TOKEN_TYPES, tokenTypeSpec, validateTokenData, type TokenType } from "./token-types.js";

// Reference check digits, written independently of the module: the Luhn digit doubles every second digit
// starting from the rightmost payload digit; the ABA ninth digit has weight 1.
function luhnCheckDigit(payload: string): string {
  const sum = [...payload].reverse().reduce((acc, c, i) => {
    const d = Number(c) * (i % 2 === 0 ? 2 : 1);
    return acc + (d > 9 ? d - 9 : d);
  }, 0);
  return String((10 - (sum % 10)) % 10);
}

function abaCheckDigit(payload: string): string {
  const weights = [3, 7, 1, 3, 7, 1, 3, 7];
  const sum = [...payload].reduce((acc, c, i) => acc + Number(c) * (weights[i] ?? 0), 0);
  return String((10 - (sum % 10)) % 10);
}

function singleDigitChanges(digits: string): string[] {
  return [...digits].flatMap((original, i) =>
    "0123456789"
      .split("")
      .filter((d) => d !== original)
      .map((d) => digits.slice(0, i) + d + digits.slice(i + 1)),
  );
}

/** Every run of 4 digits in the input (per digit group and across all of them) that shows up in the errors. */
function leakedRuns(input: unknown, errors: FieldErrors): string[] {
  const text = JSON.stringify(errors);
  const groups = String(JSON.stringify(input)).match(/[0-9]+/g) ?? [];
  return [...groups, groups.join("")]
    .flatMap((group) =>
      Array.from({ length: Math.max(0, group.length - 3) }, (_, i) => group.slice(i, i + 4)),
    )
    .filter((run) => text.includes(run));
}

const cardNumber = fc.stringMatching(/^[0-9]{12,18}$/).map((payload) => payload + luhnCheckDigit(payload));
const routingNumber = fc.stringMatching(/^[0-9]{8}$/).map((payload) => payload + abaCheckDigit(payload));
const validCard = fc.record(
  {
    number: cardNumber,
    expiration_month: fc.integer({ min: 1, max: 12 }),
    expiration_year: fc.integer({ min: 1000, max: 9999 }),
    cvc: fc.stringMatching(/^[0-9]{3,4}$/),
  },
  { requiredKeys: ["number"] },
);
const validBank = fc.record({
  routing_number: routingNumber,
  account_number: fc.stringMatching(/^[0-9]{3,17}$/),
});

describe("luhnValid", () => {
  it.each(["4242424242424242", "4111111111111111", "5555555555554444", "378282246310005", "4222222222222"])(
    "accepts the test number %s",
    (n) => {
      expect(luhnValid(n)).toBe(true);
    },
  );

  it.each(["", "4242424242424241", "4242 4242 4242 4242", "424242424242424a", "٤٢٤٢٤٢٤٢٤٢٤٢٤٢٤٢"])(
    "rejects %j",
    (n) => {
      expect(luhnValid(n)).toBe(false);
    },
  );

  it("accepts a payload with its check digit and rejects every single-digit change", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9]{1,30}$/), (payload) => {
        const number = payload + luhnCheckDigit(payload);
        expect(luhnValid(number)).toBe(true);
        for (const changed of singleDigitChanges(number)) expect(luhnValid(changed)).toBe(false);
      }),
    );
  });
});

describe("abaValid", () => {
  it.each(["021000021", "011000015", "110000000"])("accepts the routing number %s", (n) => {
    expect(abaValid(n)).toBe(true);
  });

  it.each(["", "021000022", "02100002", "0210000210", "02100002a", "021 000 021"])("rejects %j", (n) => {
    expect(abaValid(n)).toBe(false);
  });

  it("accepts eight digits with their check digit and rejects every single-digit change", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9]{8}$/), (payload) => {
        const routing = payload + abaCheckDigit(payload);
        expect(abaValid(routing)).toBe(true);
        for (const changed of singleDigitChanges(routing)) expect(abaValid(changed)).toBe(false);
      }),
    );
  });
});

describe("tokenTypeSpec (wire-format §4.2)", () => {
  it.each<[TokenType, string, string, boolean, boolean]>([
    ["token", "/general/high/", "{{ data | stringify }}", true, false],
    ["card", "/pci/high/", "{{ data.number }}", false, true],
    ["bank", "/bank/high/", "{{ data.account_number }}|{{ data.routing_number }}", false, true],
    ["card_number", "/pci/high/", "{{ data }}", false, false],
    ["social_security_number", "/pii/high/", "{{ data | remove: '-' }}", true, false],
    ["employer_id_number", "/pii/high/", "{{ data | remove: '-' }}", true, false],
    ["us_bank_account_number", "/bank/high/", "{{ data }}", false, false],
    ["us_bank_routing_number", "/bank/low/", "{{ data }}", false, false],
  ])("%s: %s, %s, search indexes %s, complex %s", (type, container, fingerprint, indexes, complex) => {
    expect(tokenTypeSpec(type)).toMatchObject({
      type,
      defaultContainer: container,
      fingerprintExpression: fingerprint,
      acceptsSearchIndexes: indexes,
      complex,
    });
    expect(containerProblem(container)).toBeUndefined();
  });

  it.each<[TokenType, unknown]>([
    ["token", undefined],
    [
      "card",
      {
        number: "{{ data.number | reveal_last: 4 }}",
        expiration_month: "{{ data.expiration_month }}",
        expiration_year: "{{ data.expiration_year }}",
      },
    ],
    [
      "bank",
      {
        routing_number: "{{ data.routing_number }}",
        account_number: "{{ data.account_number | reveal_last: 4 }}",
      },
    ],
    ["card_number", "{{ data | reveal_last: 4 }}"],
    ["social_security_number", "{{ data | reveal_last: 4 }}"],
    ["employer_id_number", "{{ data | reveal_last: 4 }}"],
    ["us_bank_account_number", "{{ data | reveal_last: 4 }}"],
    ["us_bank_routing_number", "{{ data | reveal_last: 4 }}"],
  ])("%s masks with %j", (type, mask) => {
    expect(tokenTypeSpec(type).mask).toEqual(mask);
  });

  it("gives default search indexes to SSNs and EINs only (spec §4.1 Searching Data)", () => {
    const delimited = ["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"];
    expect(TOKEN_TYPES.filter((t) => tokenTypeSpec(t).defaultSearchIndexes.length > 0)).toEqual([
      "social_security_number",
      "employer_id_number",
    ]);
    expect(tokenTypeSpec("social_security_number").defaultSearchIndexes).toEqual(delimited);
    expect(tokenTypeSpec("employer_id_number").defaultSearchIndexes).toEqual(delimited);
  });
});

describe("validateTokenData", () => {
  it.each(TOKEN_TYPES.flatMap((t) => [null, undefined].map((d) => [t, d] as const)))(
    "%s requires data (%j)",
    (type, data) => {
      expect(validateTokenData(type, data)).toEqual({ errors: { data: ["is required"] } });
    },
  );

  const fullCard = { number: "4242424242424242", expiration_month: 12, expiration_year: 2030, cvc: "123" };

  it.each<[TokenType, unknown, unknown]>([
    ["token", "anything", "anything"],
    ["token", "", ""],
    ["token", 0, 0],
    ["token", false, false],
    ["token", { nested: [1, null, { a: "b" }] }, { nested: [1, null, { a: "b" }] }],
    ["card_number", "4242424242424242", "4242424242424242"],
    ["card_number", "4111111111111111", "4111111111111111"],
    ["card_number", "5555555555554444", "5555555555554444"],
    ["card_number", "378282246310005", "378282246310005"],
    ["card_number", "4222222222222", "4222222222222"],
    ["card_number", "4000000000000000006", "4000000000000000006"],
    ["card", { number: "378282246310005" }, { number: "378282246310005" }],
    ["card", fullCard, fullCard],
    [
      "card",
      { cvc: "0123", expiration_year: 1000, expiration_month: 1, number: "5555555555554444" },
      { number: "5555555555554444", expiration_month: 1, expiration_year: 1000, cvc: "0123" },
    ],
    [
      "bank",
      { routing_number: "021000021", account_number: "000" },
      { routing_number: "021000021", account_number: "000" },
    ],
    [
      "bank",
      { account_number: "12345678901234567", routing_number: "110000000" },
      { routing_number: "110000000", account_number: "12345678901234567" },
    ],
    ["social_security_number", "123-45-6789", "123-45-6789"],
    ["social_security_number", "123456789", "123456789"],
    ["social_security_number", "000-00-0000", "000-00-0000"],
    ["employer_id_number", "12-3456789", "12-3456789"],
    ["employer_id_number", "123456789", "123456789"],
    ["us_bank_account_number", "123", "123"],
    ["us_bank_account_number", "00012345678901234", "00012345678901234"],
    ["us_bank_routing_number", "021000021", "021000021"],
    ["us_bank_routing_number", "011000015", "011000015"],
    ["us_bank_routing_number", "110000000", "110000000"],
  ])("%s accepts %j", (type, input, normalized) => {
    expect(validateTokenData(type, input)).toEqual({ data: normalized });
  });

  const SSN_RULE = "must be 9 digits written NNN-NN-NNNN or NNNNNNNNN";
  const EIN_RULE = "must be 9 digits written NN-NNNNNNN or NNNNNNNNN";
  const CARD_SHAPE = "must be an object with number, expiration_month, expiration_year, cvc";
  const BANK_SHAPE = "must be an object with routing_number, account_number";
  const NOT_A_STRING = "must be a string of digits";
  const NOT_DIGITS = "must contain only digits, without spaces or dashes";
  const LUHN = "fails the Luhn check";
  const ABA = "fails the ABA routing number checksum";
  const MONTH = "must be an integer from 1 to 12";
  const YEAR = "must be a four-digit integer";
  const card = "4242424242424242";

  const invalid: [TokenType, unknown, FieldErrors][] = [
    ["card_number", 4242424242424242, { data: [NOT_A_STRING] }],
    ["card_number", ["4242424242424242"], { data: [NOT_A_STRING] }],
    ["card_number", "4242 4242 4242 4242", { data: [NOT_DIGITS] }],
    ["card_number", "4242-4242-4242-4242", { data: [NOT_DIGITS] }],
    ["card_number", " 4242424242424242", { data: [NOT_DIGITS] }],
    ["card_number", "٤٢٤٢٤٢٤٢٤٢٤٢٤٢٤٢", { data: [NOT_DIGITS] }],
    ["card_number", "", { data: ["must be 13 to 19 digits"] }],
    ["card_number", "424242424242", { data: ["must be 13 to 19 digits"] }],
    ["card_number", "42424242424242424242", { data: ["must be 13 to 19 digits"] }],
    ["card_number", "4242424242424241", { data: [LUHN] }],
    ["card_number", "378282246310006", { data: [LUHN] }],

    ["card", card, { data: [CARD_SHAPE] }],
    ["card", [card], { data: [CARD_SHAPE] }],
    ["card", 4242424242424242, { data: [CARD_SHAPE] }],
    ["card", {}, { "data.number": ["is required"] }],
    ["card", { number: null }, { "data.number": ["is required"] }],
    ["card", { expiration_month: 3 }, { "data.number": ["is required"] }],
    ["card", { number: 4242424242424242 }, { "data.number": [NOT_A_STRING] }],
    ["card", { number: "4242424242424241" }, { "data.number": [LUHN] }],
    ["card", { number: "424242424242" }, { "data.number": ["must be 13 to 19 digits"] }],
    ["card", { number: card, expiration_month: 0 }, { "data.expiration_month": [MONTH] }],
    ["card", { number: card, expiration_month: 13 }, { "data.expiration_month": [MONTH] }],
    ["card", { number: card, expiration_month: 1.5 }, { "data.expiration_month": [MONTH] }],
    ["card", { number: card, expiration_month: "03" }, { "data.expiration_month": [MONTH] }],
    ["card", { number: card, expiration_month: null }, { "data.expiration_month": [MONTH] }],
    ["card", { number: card, expiration_year: 30 }, { "data.expiration_year": [YEAR] }],
    ["card", { number: card, expiration_year: 10000 }, { "data.expiration_year": [YEAR] }],
    ["card", { number: card, expiration_year: "2030" }, { "data.expiration_year": [YEAR] }],
    ["card", { number: card, cvc: 123 }, { "data.cvc": [NOT_A_STRING] }],
    ["card", { number: card, cvc: "12" }, { "data.cvc": ["must be 3 to 4 digits"] }],
    ["card", { number: card, cvc: "12345" }, { "data.cvc": ["must be 3 to 4 digits"] }],
    ["card", { number: card, cvc: "12 3" }, { "data.cvc": [NOT_DIGITS] }],
    ["card", { number: card, name: "A" }, { "data.name": ["is not a card field"] }],
    ["card", { number: card, constructor: 1 }, { "data.constructor": ["is not a card field"] }],
    [
      "card",
      { number: "4242424242424241", expiration_month: 13, expiration_year: 99, cvc: "1", exp: "12/30" },
      {
        "data.number": [LUHN],
        "data.expiration_month": [MONTH],
        "data.expiration_year": [YEAR],
        "data.cvc": ["must be 3 to 4 digits"],
        "data.exp": ["is not a card field"],
      },
    ],

    ["bank", "021000021", { data: [BANK_SHAPE] }],
    ["bank", [], { data: [BANK_SHAPE] }],
    ["bank", {}, { "data.routing_number": ["is required"], "data.account_number": ["is required"] }],
    [
      "bank",
      { routing_number: null, account_number: "12345678" },
      { "data.routing_number": ["is required"] },
    ],
    ["bank", { routing_number: "021000022", account_number: "12345678" }, { "data.routing_number": [ABA] }],
    [
      "bank",
      { routing_number: "02100002", account_number: "12345678" },
      { "data.routing_number": ["must be 9 digits"] },
    ],
    [
      "bank",
      { routing_number: 21000021, account_number: "12345678" },
      { "data.routing_number": [NOT_A_STRING] },
    ],
    [
      "bank",
      { routing_number: "021000021", account_number: "12" },
      { "data.account_number": ["must be 3 to 17 digits"] },
    ],
    [
      "bank",
      { routing_number: "021000021", account_number: "123456789012345678" },
      { "data.account_number": ["must be 3 to 17 digits"] },
    ],
    [
      "bank",
      { routing_number: "021000021", account_number: 12345678 },
      { "data.account_number": [NOT_A_STRING] },
    ],
    [
      "bank",
      { routing_number: "021000021", account_number: "12345678", type: "checking" },
      { "data.type": ["is not a bank field"] },
    ],

    ["social_security_number", 123456789, { data: [SSN_RULE] }],
    ["social_security_number", "123-456789", { data: [SSN_RULE] }],
    ["social_security_number", "12345-6789", { data: [SSN_RULE] }],
    ["social_security_number", "123 45 6789", { data: [SSN_RULE] }],
    ["social_security_number", "123–45–6789", { data: [SSN_RULE] }],
    ["social_security_number", "12345678", { data: [SSN_RULE] }],
    ["social_security_number", "1234567890", { data: [SSN_RULE] }],
    ["social_security_number", "12-3456789", { data: [SSN_RULE] }],
    ["social_security_number", "123-45-678a", { data: [SSN_RULE] }],
    ["social_security_number", "123-45-6789\n", { data: [SSN_RULE] }],

    ["employer_id_number", 123456789, { data: [EIN_RULE] }],
    ["employer_id_number", "123-45-6789", { data: [EIN_RULE] }],
    ["employer_id_number", "12-345678", { data: [EIN_RULE] }],
    ["employer_id_number", "123-456789", { data: [EIN_RULE] }],
    ["employer_id_number", "1234567890", { data: [EIN_RULE] }],

    ["us_bank_account_number", 12345678, { data: [NOT_A_STRING] }],
    ["us_bank_account_number", "12", { data: ["must be 3 to 17 digits"] }],
    ["us_bank_account_number", "123456789012345678", { data: ["must be 3 to 17 digits"] }],
    ["us_bank_account_number", "1234-5678", { data: [NOT_DIGITS] }],

    ["us_bank_routing_number", 21000021, { data: [NOT_A_STRING] }],
    ["us_bank_routing_number", "021000022", { data: [ABA] }],
    ["us_bank_routing_number", "02100002", { data: ["must be 9 digits"] }],
    ["us_bank_routing_number", "0210000210", { data: ["must be 9 digits"] }],
    ["us_bank_routing_number", "021-000-021", { data: [NOT_DIGITS] }],
  ];

  it.each(invalid)("%s rejects %j", (type, input, errors) => {
    expect(validateTokenData(type, input)).toEqual({ errors });
  });

  it.each(invalid)("%s never quotes %j in its errors", (type, input) => {
    const result = validateTokenData(type, input);
    if (!("errors" in result)) throw new Error("expected errors");
    if (typeof input === "string" && input.length >= 4) {
      expect(JSON.stringify(result.errors)).not.toContain(input);
    }
    expect(leakedRuns(input, result.errors)).toEqual([]);
  });

  it("never quotes any part of a rejected number", () => {
    const digitish = fc.oneof(fc.stringMatching(/^[0-9 -]{0,24}$/), fc.integer(), fc.double());
    const scalarTypes = TOKEN_TYPES.filter((t) => t !== "token" && !tokenTypeSpec(t).complex);
    const input = fc.oneof(
      fc.tuple(fc.constantFrom(...scalarTypes), digitish),
      fc.tuple(
        fc.constant<TokenType>("card"),
        fc.record(
          { number: digitish, expiration_month: digitish, expiration_year: digitish, cvc: digitish },
          { requiredKeys: [] },
        ),
      ),
      fc.tuple(
        fc.constant<TokenType>("bank"),
        fc.record({ routing_number: digitish, account_number: digitish }, { requiredKeys: [] }),
      ),
    );
    fc.assert(
      fc.property(input, ([type, data]) => {
        const result = validateTokenData(type, data);
        if ("errors" in result) expect(leakedRuns(data, result.errors)).toEqual([]);
      }),
    );
  });

  it("answers any value for any type with data or a non-empty map of messages, never a throw", () => {
    const loose = fc.oneof(fc.jsonValue(), fc.anything());
    const cardLike = fc.dictionary(
      fc.constantFrom("number", "expiration_month", "expiration_year", "cvc", "other", "__proto__"),
      fc.oneof(cardNumber, fc.integer({ min: -1, max: 10_000 }), loose),
    );
    const bankLike = fc.dictionary(
      fc.constantFrom("routing_number", "account_number", "toString"),
      fc.oneof(routingNumber, loose),
    );
    fc.assert(
      fc.property(fc.constantFrom(...TOKEN_TYPES), fc.oneof(loose, cardLike, bankLike), (type, data) => {
        const result = validateTokenData(type, data);
        expect(Object.keys(result)).toHaveLength(1);
        if ("errors" in result) {
          expect(Object.keys(result.errors).length).toBeGreaterThan(0);
          for (const messages of Object.values(result.errors)) {
            expect(messages.length).toBeGreaterThan(0);
            for (const m of messages) expect(typeof m).toBe("string");
          }
        }
      }),
    );
  });

  it("returns a valid card or bank unchanged, and its normalized form validates to itself", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          validCard.map((data) => ["card", data] as const),
          validBank.map((data) => ["bank", data] as const),
        ),
        ([type, data]) => {
          const result = validateTokenData(type, data);
          expect(result).toEqual({ data });
          if ("data" in result) expect(validateTokenData(type, result.data)).toEqual(result);
        },
      ),
    );
  });

  it("accepts every nine digits in either written form as an SSN and an EIN", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[0-9]{9}$/), (d) => {
        for (const [type, written] of [
          ["social_security_number", `${d.slice(0, 3)}-${d.slice(3, 5)}-${d.slice(5)}`],
          ["employer_id_number", `${d.slice(0, 2)}-${d.slice(2)}`],
        ] as const) {
          expect(validateTokenData(type, written)).toEqual({ data: written });
          expect(validateTokenData(type, d)).toEqual({ data: d });
        }
      }),
    );
  });

  it.each<[TokenType, object]>([
    ["card", fullCard],
    ["bank", { routing_number: "021000021", account_number: "12345678" }],
  ])("masks only fields that a valid %s holds", (type, data) => {
    const mask = tokenTypeSpec(type).mask;
    expect(Object.keys(data)).toEqual(expect.arrayContaining(Object.keys(mask ?? {})));
    expect(validateTokenData(type, data)).toEqual({ data });
  });
});
