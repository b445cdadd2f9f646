import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";

const CARD = "4242424242424242";
const SSN = "123-45-6789";

/**
 * Every detokenization expression form of wire-format §4.5, at HTTP level: `{{ <id> }}`, `{{ token: <id> }}`,
 * each with or without filters, whole-string and interpolated, and the bad forms.
 */
describe.skipIf(STORE_UNAVAILABLE)("POST /detokenize expressions", () => {
  let server: TestServer;
  /** Reveals /pci/ and /general/, masks /pii/. */
  let reader: string;
  /** Redacts everything. */
  let redactor: string;
  const ids: Record<"card" | "number" | "ssn" | "text" | "count" | "flag" | "object", string> = {
    card: "",
    number: "",
    ssn: "",
    text: "",
    count: "",
    flag: "",
    object: "",
  };

  async function key(body: unknown): Promise<string> {
    const response = await server.request("POST", "/applications", { body });
    expect(response.status, response.text).toBe(201);
    return response.body.key as string;
  }

  beforeAll(async () => {
    server = await startTestServer();
    const writer = await key({
      name: "writer",
      type: "private",
      permissions: ["token:create"],
    });
    reader = await key({
      name: "reader",
      type: "private",
      rules: [
        { priority: 1, container: "/pci/", transform: "reveal", permissions: ["token:read"] },
        { priority: 2, container: "/general/", transform: "reveal", permissions: ["token:read"] },
        { priority: 3, container: "/pii/", transform: "mask", permissions: ["token:read"] },
      ],
    });
    redactor = await key({
      name: "redactor",
      type: "private",
      rules: [{ priority: 1, container: "/", transform: "redact", permissions: ["token:read"] }],
    });
    const create = async (body: unknown) => {
      const response = await server.request("POST", "/tokens", { key: writer, body });
      expect(response.status, response.text).toBe(201);
      return response.body.id as string;
    };
    ids.card = await create({
      type: "card",
      data: { number: CARD, expiration_month: 4, expiration_year: 2031, cvc: "123" },
      metadata: { customer: "cus_1" },
    });
    ids.number = await create({ type: "card_number", data: CARD });
    ids.ssn = await create({ type: "social_security_number", data: SSN });
    ids.text = await create({ data: "Alice Example" });
    ids.count = await create({ data: 42 });
    ids.flag = await create({ data: true });
    ids.object = await create({ data: { books: [{ author: "Le Guin" }], n: 3 } });
  });
  afterAll(() => server?.close());

  const detokenize = (body: unknown, apiKey = reader) =>
    server.request("POST", "/detokenize", { key: apiKey, body });
  const CARD_DATA = { number: CARD, expiration_month: 4, expiration_year: 2031, cvc: "123" };

  // [what, expression (`$card` etc. stand for token ids), the value a whole string becomes]
  const WHOLE: [string, string, unknown][] = [
    ["data, string", "{{ $text }}", "Alice Example"],
    ["data, no blanks", "{{$text}}", "Alice Example"],
    ["data, blanks around the braces", "  {{ $text }}  ", "Alice Example"],
    ["data, number keeps its type", "{{ $count }}", 42],
    ["data, boolean keeps its type", "{{ $flag }}", true],
    ["data, complex object", "{{ $card }}", CARD_DATA],
    ["data | json", "{{ $card | json: '$.number' }}", CARD],
    ["data | json, number kept", "{{ $card | json: '$.expiration_month' }}", 4],
    ["data | json, bracket path", "{{ $object | json: \"$['books'][0].author\" }}", "Le Guin"],
    ["data | json selecting nothing", "{{ $card | json: '$.missing' }}", null],
    ["data | json | last4", "{{ $card | json: '$.number' | last4 }}", "4242"],
    ["data | last4", "{{ $number | last4 }}", "4242"],
    ["data | reveal_last", "{{ $number | reveal_last: 4, '*' }}", "************4242"],
    ["data | card_bin", "{{ $number | card_bin }}", "42424242"],
    ["data | card_exp", "{{ $card | card_exp: 'MM/YY' }}", "04/31"],
    ["data | to_string", "{{ $count | to_string }}", "42"],
    ["data | to_number", "{{ $card | json: '$.cvc' | to_number }}", 123],
    ["data | stringify", "{{ $object | stringify }}", '{"books":[{"author":"Le Guin"}],"n":3}'],
    ["data | Liquid filters", "{{ $text | upcase | split: ' ' | first }}", "ALICE"],
    ["data, masked by the rule", "{{ $ssn }}", "XXX-XX-6789"],
    ["data | filter over the masked value", "{{ $ssn | remove: '-' }}", "XXXXX6789"],
    ["token | json: $.data", "{{ token: $card | json: '$.data' }}", CARD_DATA],
    ["token | json: $.data.number", "{{ token: $card | json: '$.data.number' }}", CARD],
    ["token, no blank after the colon", "{{ token:$card | json: '$.data.number' }}", CARD],
    ["token | json: $.metadata", "{{ token: $card | json: '$.metadata.customer' }}", "cus_1"],
    ["token | json: $.type", "{{ token: $ssn | json: '$.type' }}", "social_security_number"],
    ["token | json: $.data, masked", "{{ token: $ssn | json: '$.data' }}", "XXX-XX-6789"],
    ["token | json: $.containers[0]", "{{ token: $number | json: '$.containers[0]' }}", "/pci/high/"],
    ["token | json | card_exp", "{{ token: $card | json: '$.data' | card_exp: 'MM/YYYY' }}", "04/2031"],
  ];

  const withIds = (text: string) =>
    text.replace(/\$(card|number|ssn|text|count|flag|object)\b/g, (_, n) => ids[n as keyof typeof ids]);

  it.each(WHOLE)("a whole string: %s", async (_what, expression, expected) => {
    const response = await detokenize({ value: withIds(expression), kept: 7 });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({ value: expected, kept: 7 });
  });

  it("gives the token object as the caller's rule shows it", async () => {
    const response = await detokenize({
      card: withIds("{{ token: $card }}"),
      ssn: withIds("{{ token:$ssn }}"),
    });
    expect(response.status, response.text).toBe(200);
    const card = await server.request("GET", `/tokens/${ids.card}`, { key: reader });
    expect(response.body.card).toEqual(card.body);
    expect(response.body.card).toMatchObject({
      id: ids.card,
      type: "card",
      data: CARD_DATA,
      containers: ["/pci/high/"],
    });
    expect(response.body.ssn).toMatchObject({ id: ids.ssn, data: "XXX-XX-6789" });
  });

  // [what, text with expressions, what it becomes]
  const INTERPOLATED: [string, string, string][] = [
    ["data", "name: {{ $text }}.", "name: Alice Example."],
    ["a number", "n={{ $count }}", "n=42"],
    ["complex data as JSON text", "{{ $object }}!", '{"books":[{"author":"Le Guin"}],"n":3}!'],
    [
      "with filters",
      "exp {{ $card | card_exp: 'MM/YY' }}, last4 {{ $card | json: '$.number' | last4 }}",
      "exp 04/31, last4 4242",
    ],
    ["the token form", "type={{ token: $number | json: '$.type' }}", "type=card_number"],
    ["a path selecting nothing", "[{{ $card | json: '$.nope' }}]", "[]"],
    [
      "two forms of one token",
      "{{ $number | last4 }}/{{ token: $number | json: '$.data' | card_bin }}",
      "4242/42424242",
    ],
  ];

  it.each(INTERPOLATED)("inside a longer string: %s", async (_what, text, expected) => {
    const response = await detokenize([withIds(text)]);
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual([expected]);
  });

  it("replaces expressions anywhere in the body, nested objects and arrays included", async () => {
    const response = await detokenize({
      a: { b: [withIds("{{ $count }}"), { c: withIds("{{ token: $text | json: '$.data' }}") }] },
      plain: "no expression",
      n: null,
    });
    expect(response.status, response.text).toBe(200);
    expect(response.body).toEqual({
      a: { b: [42, { c: "Alice Example" }] },
      plain: "no expression",
      n: null,
    });
  });

  // [what, expression, the message under errors.body]
  const BAD: [string, string, string][] = [
    [
      "an empty expression",
      "{{ }}",
      "{{ }} is not supported: detokenize takes {{ <token id> }} or {{ token: <token id> }}, each optionally | filters",
    ],
    [
      "token: without an id",
      "{{ token: }}",
      "{{ token: }} is not supported: detokenize takes {{ <token id> }} or {{ token: <token id> }}, each optionally | filters",
    ],
    [
      "two ids",
      "{{ $text $count }}",
      "{{ $text $count }} is not supported: detokenize takes {{ <token id> }} or {{ token: <token id> }}, each optionally | filters",
    ],
    [
      "a control character",
      "{{ a\u0000b }}",
      "{{ a\u0000b }} is not supported: detokenize takes {{ <token id> }} or {{ token: <token id> }}, each optionally | filters",
    ],
    [
      "token_intent",
      "{{ token_intent: $text }}",
      "{{ token_intent: $text }} is not supported: Tessera has no token_intents",
    ],
    [
      "an unknown filter",
      "{{ $text | nosuch }}",
      "{{ $text | nosuch }} has invalid filters: unknown filter 'nosuch'",
    ],
    [
      "a revealing filter",
      "{{ $text | base64_encode }}",
      "{{ $text | base64_encode }} has invalid filters: unknown filter 'base64_encode'",
    ],
    [
      "stringify not last",
      "{{ $object | stringify | upcase }}",
      "{{ $object | stringify | upcase }} has invalid filters: filter stringify must be the last filter",
    ],
    [
      "another variable",
      "{{ $text | append: secret }}",
      "{{ $text | append: secret }} has invalid filters: unknown variable 'secret'",
    ],
  ];

  it.each(BAD)("refuses %s with a 400", async (_what, expression, message) => {
    const text = withIds(expression);
    expectProblem(await detokenize({ x: text, y: withIds("{{ $text }}") }), 400, {
      code: "validation-failed",
      errors: { body: [typeof message === "string" ? withIds(message) : message] },
    });
  });

  // [what, expression, the message under errors.body]
  const FAILS: [string, string, string][] = [
    [
      "a JSONPath the filter refuses",
      "{{ $card | json: '$..number' }}",
      "could not be evaluated: filter json: unsupported JSONPath at offset 1: only $, .name, ['name'] and [index] are allowed",
    ],
    [
      "a path that is not a string",
      "{{ $card | json: 5 }}",
      "could not be evaluated: filter json: path must be a string",
    ],
    [
      "a filter for another type of value",
      "{{ $text | card_exp: 'MM' }}",
      "could not be evaluated: filter card_exp: expects card data",
    ],
    [
      "metadata, which is no variable here",
      "{{ $text | append: metadata.x }}",
      "could not be evaluated: unknown variable 'metadata.x'",
    ],
    [
      "a failing cast",
      "{{ $text | to_number }}",
      "could not be evaluated: filter to_number: value is not a number",
    ],
  ];

  it.each(FAILS)("answers %s with a 400 naming the expression", async (_what, expression, message) => {
    const text = withIds(expression);
    expectProblem(await detokenize({ x: `before ${text} after` }), 400, {
      errors: { body: [`${text} ${message}`] },
    });
  });

  it("checks each token's rule as before: missing is a 400, redacted or unreachable a 403", async () => {
    expectProblem(await detokenize({ x: "{{ token: no-such-token | json: '$.data' }}" }), 400, {
      errors: { body: ["token no-such-token does not exist"] },
    });
    expectProblem(await detokenize({ x: withIds("{{ token: $text | json: '$.id' }}") }, redactor), 403, {
      detail: /redacts/,
    });
    expectProblem(await detokenize({ x: withIds("{{ $number | last4 }}") }, redactor), 403, {
      detail: /redacts/,
    });
    const outsider = await key({
      name: "pii only",
      type: "private",
      rules: [{ priority: 1, container: "/pii/", transform: "reveal", permissions: ["token:read"] }],
    });
    expectProblem(await detokenize({ x: withIds("{{ token: $card | json: '$.type' }}") }, outsider), 403, {
      detail: new RegExp(`may not read token ${ids.card}`),
    });
  });

  it("answers another tenant's token in either form like a missing one", async () => {
    const tenant = await server.request("POST", "/tenants", { body: { name: "Neighbour" } });
    expect(tenant.status, tenant.text).toBe(201);
    const neighbour = await server.request("POST", "/applications", {
      key: tenant.body.application.key,
      body: { name: "neighbour", type: "private", permissions: ["token:read"] },
    });
    expect(neighbour.status, neighbour.text).toBe(201);
    for (const expression of ["{{ token: $card | json: '$.type' }}", "{{ $card | json: '$.number' }}"]) {
      expectProblem(await detokenize({ x: withIds(expression) }, neighbour.body.key), 400, {
        errors: { body: [`token ${ids.card} does not exist`] },
      });
    }
  });

  it("counts distinct tokens across both forms: 100 pass, 101 are a 400", async () => {
    const writer = await key({ name: "bulk", type: "private", permissions: ["token:create"] });
    const tokenized = await server.request("POST", "/tokenize", {
      key: writer,
      body: Array.from({ length: 101 }, (_, i) => `v${i}`),
    });
    expect(tokenized.status, tokenized.text).toBe(200);
    const many = tokenized.body as string[];
    const body = (n: number) =>
      many
        .slice(0, n)
        .flatMap((id) => [`{{ ${id} }}`, `{{ token: ${id} | json: '$.data' }}`, `{{ ${id} | upcase }}`]);
    const hundred = await detokenize(body(100));
    expect(hundred.status, hundred.text).toBe(200);
    expect(hundred.body.slice(0, 3)).toEqual(["v0", "v0", "V0"]);
    expectProblem(await detokenize(body(101)), 400, {
      errors: { body: ["may reference at most 100 tokens"] },
    });
  });

  it("bounds the different expressions of one request", async () => {
    const expressions = Array.from({ length: 1001 }, (_, i) => withIds(`{{ $text | append: '${i}' }}`));
    expectProblem(await detokenize(expressions), 400, {
      errors: { body: ["may hold at most 1000 different expressions"] },
    });
    const repeatedBad = Array.from({ length: 1001 }, () => withIds("{{ $text | nosuch }}"));
    expectProblem(await detokenize(repeatedBad), 400, {
      errors: { body: [withIds("{{ $text | nosuch }} has invalid filters: unknown filter 'nosuch'")] },
    });
    const repeated = Array.from({ length: 1001 }, () => withIds("{{ $text | append: '!' }}"));
    const response = await detokenize(repeated);
    expect(response.status, response.text).toBe(200);
    expect(response.body[1000]).toBe("Alice Example!");
  });

  it("keeps the engine's limits: a template over 4096 characters is a 400", async () => {
    const long = withIds(`{{ $text | append: '${"x".repeat(4100)}' }}`);
    expectProblem(await detokenize({ x: long }), 400, {
      errors: { body: [`${long} has invalid filters: template too long (at most 4096 characters)`] },
    });
  });
});
