import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ExpressionError, createExpressionEngine, type ExpressionScope } from "./expressions.js";

const engine = createExpressionEngine();
const evaluate = (template: string, data: unknown, metadata?: Record<string, string>): unknown =>
  engine.evaluate(template, metadata === undefined ? { data } : { data, metadata });

/** Runs `action` and returns the ExpressionError it must throw. */
function expressionError(action: () => unknown): ExpressionError {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(ExpressionError);
    return error as ExpressionError;
  }
  throw new Error("expected an ExpressionError");
}

const SECRET = "4111111111111111";
const CARD = { number: "3622720627165567", expiration_month: 10, expiration_year: 2028 };
const BOOKS = {
  books: [
    { author: "Herman Melville", title: "Moby Dick", price: 8.99 },
    { author: "J. R. R. Tolkien", title: "The Lord of the Rings", price: 22.99 },
  ],
  bicycle: { color: "red", price: 19.95 },
};

function luhnValid(number: string): boolean {
  const digits = [...number.replace(/\D/g, "")].map(Number).reverse();
  const sum = digits.reduce((s, d, i) => s + (i % 2 === 1 ? (d * 2 > 9 ? d * 2 - 9 : d * 2) : d), 0);
  return sum % 10 === 0;
}

describe("BT filters (wire-format §4.5), with BT's documented examples", () => {
  it.each<[string, unknown, unknown]>([
    ["{{ data | last4 }}", "4242424242424242", "4242"],
    ["{{ data | last4 }}", "123", "123"],
    ["{{ data.number | slice: 12, 2 | last4 }}", CARD, "55"],
    ["{{ data | last4 }}", 123456, "3456"],

    ["{{ data | reveal_last: 4 }}", "4242424242424242", "XXXXXXXXXXXX4242"],
    ["{{ data | reveal_last: 4 }}", "36227206271667", "XXXXXXXXXX1667"],
    ["{{ data | reveal_last: 6 }}", "36227206271667", "XXXXXXXX271667"],
    ["{{ data | reveal_last: 3, '#' }}", "36227206271667", "###########667"],
    ["{{ data | reveal_last: 4 }}", "123-45-6789", "XXX-XX-6789"],
    ["{{ data | reveal_last: 4, '#' }}", "4242-4242-4242-4242", "####-####-####-4242"],
    ["{{ data | reveal_last: 4 }}", "12", "12"],
    ["{{ data | reveal_last: 0 }}", "ab-1", "XX-X"],
    ["{{ data | reveal_last: '2' }}", "1234", "XX34"],

    ["{{ data | reveal: 6 }}", "3622-7206-2716-5567", "3622-7XXXXXXXXXXXXX"],
    ["{{ data | reveal: 7, 5 }}", "3622-7206-2716-5567", "3622-72XXXXXXX-5567"],
    ["{{ data | reveal: 7, 5, '#' }}", "3622-7206-2716-5567", "3622-72#######-5567"],
    ["{{ data | reveal: 7, 4, '#', '-' }}", "3622-7206-2716-5567", "3622-72##-####-5567"],
    ["{{ data | reveal: 10, 9 }}", "3622-7206-2716-5567", "XXXXXXXXXXXXXXXXXXX"],
    ["{{ data | reveal }}", "abc", "XXX"],
    ["{{ data | reveal: 0, 0, 'X', '-' }}", "--", "XX"],

    ["{{ data.number | card_mask: 'false', 'false', 'X', '-' }}", CARD, "XXXXXXXXXXXXXXXX"],
    ["{{ data.number | card_mask: 'true', 'false', 'X', '-' }}", CARD, "36227206XXXXXXXX"],
    ["{{ data.number | card_mask: 'true', 'true', '#', '-' }}", CARD, "36227206####5567"],
    ["{{ data.number | card_mask: 'false', 'true', 'X', '-' }}", CARD, "XXXXXXXXXXXX5567"],
    ["{{ data | card_mask: 'false', 'false', 'X', '-' }}", "3622-7206-2716-5567", "XXXX-XXXX-XXXX-XXXX"],
    ["{{ data | card_mask: 'true', 'false', 'X', '-' }}", "3622-7206-2716-5567", "3622-7206-XXXX-XXXX"],
    ["{{ data | card_mask: 'true', 'true', '#', '-' }}", "3622-7206-2716-5567", "3622-7206-####-5567"],
    ["{{ data | card_mask: 'false', 'true', 'X', '-' }}", "3622-7206-2716-5567", "XXXX-XXXX-XXXX-5567"],
    ["{{ data | card_mask: true, true }}", "378282246310005", "378282XXXXX0005"],
    ["{{ data | card_mask }}", "378282246310005", "XXXXXXXXXXXXXXX"],
    ["{{ data | card_mask: true, true }}", "12345678", "XXXXXXXX"],

    ["{{ data.number | card_bin }}", CARD, "36227206"],
    ["{{ data | card_bin }}", "378282246310005", "378282"],
    ["{{ data | card_bin: '-' }}", "3622-7206-2716-5567", "36227206"],
    ["{{ data | card_bin: ' ' }}", "3782 822463 10005", "378282"],

    ["{{ data | card_exp: 'MM' }}", CARD, "10"],
    ["{{ data | card_exp: 'MMYY' }}", CARD, "1028"],
    ["{{ data | card_exp: 'YYYY' }}", CARD, "2028"],
    ["{{ data | card_exp: 'YYYY-MM' }}", CARD, "2028-10"],
    ["{{ data | card_exp: 'YYYY/MM' }}", CARD, "2028/10"],
    ["{{ data | card_exp: 'MM/YY' }}", CARD, "10/28"],
    ["{{ data | card_exp: 'MM/YYYY' }}", CARD, "10/2028"],
    ["{{ data | card_exp: 'MM_YYYY' }}", CARD, "10_2028"],
    ["{{ data | card_exp: 'MM-YYYY' }}", CARD, "10-2028"],
    ["{{ data | card_exp: 'MM/YY' }}", { expiration_month: 3, expiration_year: 2031 }, "03/31"],
    ["{{ data | card_exp: 'MMYY' }}", { expiration_month: "7", expiration_year: "2030" }, "0730"],

    ["{{ data | pad_left: 6, '0' }}", "1234", "001234"],
    ["{{ data | pad_left: 6, 'X' }}", "1234", "XX1234"],
    ["{{ data | pad_left: 4, '0' }}", "1234", "1234"],
    ["{{ data | pad_left: 2, '0' }}", "1234", "1234"],
    ["{{ data.expiration_month | pad_left: 2, '0' }}", { expiration_month: 3 }, "03"],
    ["{{ data | pad_right: 6, '0' }}", "1234", "123400"],
    ["{{ data | pad_right: 6, 'X' }}", "1234", "1234XX"],
    ["{{ data | pad_right: 2, '0' }}", "1234", "1234"],
    ["{{ data.x | pad_left: 6, '0' }}", { x: null }, null],
    ["{{ data.x | pad_right: 6, '0' }}", { x: null }, null],

    ["{{ data | json: '$.bicycle.color' }}", BOOKS, "red"],
    ["{{ data | json: '$.bicycle.price' }}", BOOKS, 19.95],
    ["{{ data | json: '$.books[0].author' }}", BOOKS, "Herman Melville"],
    ["{{ data | json: \"$['books'][1]['title']\" }}", BOOKS, "The Lord of the Rings"],
    ["{{ data | json: '$.bicycle' }}", BOOKS, BOOKS.bicycle],
    ["{{ data | json: '$' }}", BOOKS, BOOKS],
    ["{{ data | json: '$.nothing' }}", BOOKS, undefined],
    ["{{ data | json: '$.books[0].author' | upcase }}", BOOKS, "HERMAN MELVILLE"],

    ["{{ data.books[0].price | stringify }}", BOOKS, "8.99"],
    ["{{ data.books[1].title | stringify }}", BOOKS, '"The Lord of the Rings"'],
    ["{{ data.bicycle | stringify }}", BOOKS, '{"color":"red","price":19.95}'],
    ["{{ data.books | json_stringify }}", BOOKS, JSON.stringify(BOOKS.books)],
    ["{{ data.x | stringify }}", { x: null }, null],

    ["{{ data.n | to_string }}", { n: 3.14159 }, "3.14159"],
    ["{{ data.b | to_string }}", { b: true }, "true"],
    ["{{ data.s | to_string }}", { s: "foo" }, "foo"],
    ["{{ data | to_number }}", "42", 42],
    ["{{ data | to_number }}", "3.14159", 3.14159],
    ["{{ data | to_number }}", " -1e3 ", -1000],
    ["{{ data | to_number }}", 7, 7],
    ["{{ data | to_boolean }}", "true", true],
    ["{{ data | to_boolean }}", "false", false],
    ["{{ data | to_boolean }}", true, true],
    ["{{ data.x | to_boolean }}", { x: null }, null],
  ])("%s on %j → %j", (template, data, expected) => {
    engine.check(template);
    expect(evaluate(template, data)).toEqual(expected);
  });

  it.each([
    ["{{ data | reveal_last }}", "4242", "filter reveal_last: length must be a non-negative integer"],
    ["{{ data | reveal_last: -1 }}", "4242", "filter reveal_last: length must be a non-negative integer"],
    ["{{ data | reveal_last: 1.5 }}", "4242", "filter reveal_last: length must be a non-negative integer"],
    ["{{ data | reveal_last: 4, 'XY' }}", "4242", "filter reveal_last: mask_char must be a single character"],
    ["{{ data | reveal_last: 4 }}", { a: 1 }, "filter reveal_last: expects a string"],
    ["{{ data | last4 }}", ["a"], "filter last4: expects a string"],
    ["{{ data | reveal: 'a' }}", "4242", "filter reveal: reveal_first must be a non-negative integer"],
    ["{{ data | card_mask: 'yes' }}", "4242", "filter card_mask: reveal_bin must be true or false"],
    ["{{ data | card_bin }}", "4242-4242-4242-4242", "filter card_bin: value must be digits"],
    ["{{ data | card_exp: 'DD' }}", CARD, "filter card_exp: format must be one of MM, MMYY"],
    ["{{ data | card_exp: 'MM' }}", "1028", "filter card_exp: expects card data"],
    [
      "{{ data | card_exp: 'MM' }}",
      { expiration_month: 13, expiration_year: 2028 },
      "valid expiration_month",
    ],
    ["{{ data | card_exp: 'MM' }}", { expiration_month: 1 }, "valid expiration_year"],
    ["{{ data | pad_left: 6 }}", "1234", "filter pad_left: pad_char must be a single character"],
    ["{{ data | pad_right: 'x', '0' }}", "1234", "filter pad_right: length must be a non-negative integer"],
    ["{{ data | json: 1 }}", BOOKS, "filter json: path must be a string"],
    ["{{ data | json: '$.books[?(@.price < 10)].title' }}", BOOKS, "filter json: unsupported JSONPath"],
    ["{{ data | json: '$..author' }}", BOOKS, "filter json: unsupported JSONPath"],
    ["{{ data | to_string }}", { a: 1 }, "filter to_string: cannot convert an object or array"],
    ["{{ data | to_number }}", "12abc", "filter to_number: value is not a number"],
    ["{{ data | to_number }}", "", "filter to_number: value is not a number"],
    ["{{ data | to_number }}", "0x10", "filter to_number: value is not a number"],
    ["{{ data | to_number }}", "1e999", "filter to_number: value is not a number"],
    ["{{ data | to_number }}", true, "filter to_number: value is not a number"],
    ["{{ data | to_boolean }}", "yes", "filter to_boolean: value is not true or false"],
    ["{{ data | to_boolean }}", 1, "filter to_boolean: value is not true or false"],
    ["{{ data | alias_card }}", "4242x4242", "filter alias_card: value must be a card number"],
    ["{{ data | alias_card: true, true }}", "424242424", "filter alias_card: the number is too short"],
    ["{{ data | alias_preserve_length: -2 }}", "4242", "filter alias_preserve_length: reveal_first must be"],
  ])("%s on %j fails: %s", (template, data, message) => {
    expect(expressionError(() => evaluate(template, data)).message).toContain(message);
  });

  it("stringify and json_stringify must come last, which check() reports", () => {
    for (const template of ["{{ data | stringify | upcase }}", "{{ data | json_stringify | size }}"]) {
      expect(expressionError(() => engine.check(template)).message).toMatch(/must be the last filter/);
    }
    engine.check("{{ data | upcase | stringify }}");
  });

  it("alias_card keeps delimiters, the BIN and the last 4 on request (BT examples)", () => {
    const number = "3622-7206-2716-5567";
    const both = evaluate("{{ data | alias_card: 'true', 'true' }}", number) as string;
    expect(both).toMatch(/^3622-7206-\d{4}-5567$/);
    expect(luhnValid(both)).toBe(true);
    const none = evaluate("{{ data.number | alias_card }}", CARD) as string;
    expect(none).toMatch(/^\d{16}$/);
    expect(luhnValid(none)).toBe(true);
  });

  it("alias_preserve_format and alias_preserve_length reveal what they are asked to (BT examples)", () => {
    const data = "ABC12345DEF67890";
    expect(evaluate("{{ data | alias_preserve_format: 3, 5 }}", data)).toMatch(/^ABC\d{5}[A-Z]{3}67890$/);
    expect(evaluate("{{ data | alias_preserve_format }}", "ab-CD 12")).toMatch(/^[a-z]{2}-[A-Z]{2} \d{2}$/);
    expect(evaluate("{{ data | alias_preserve_length: 3, 5 }}", data)).toMatch(/^ABC[a-z0-9]{8}67890$/);
    expect(evaluate("{{ data | alias_preserve_length }}", "a-b c")).toMatch(/^[a-z0-9]{5}$/);
    expect(evaluate("{{ data | alias_preserve_length: 3, 3 }}", "abcdef")).not.toBe("abcdef");
  });

  it("passes null through every BT filter that takes text", () => {
    const filters = ["last4", "reveal_last: 4", "reveal", "card_mask", "card_bin", "card_exp: 'MM'"];
    const more = ["json: '$'", "to_string", "to_number", "alias_card", "alias_preserve_format"];
    for (const filter of [...filters, ...more, "alias_preserve_length"]) {
      expect(evaluate(`{{ data.x | ${filter} }}`, { x: null })).toBeNull();
    }
  });
});

describe("standard Liquid filters", () => {
  it.each<[string, unknown, unknown]>([
    ["{{ data | remove: '-' }}", "123-45-6789", "123456789"],
    ["{{ data | replace: '-' }}", "123-45-6789", "123456789"],
    ["{{ data | replace: '-', '.' }}", "123-45-6789", "123.45.6789"],
    ["{{ data.name | split: ' ' | last | upcase }}", { name: "John Doe" }, "DOE"],
    ["{{ data | slice: 0, 3 }}", "abcdef", "abc"],
    ["{{ data | downcase | append: '!' | prepend: '>' }}", "ABC", ">abc!"],
    ["{{ data | size }}", "abcdef", 6],
    ["{{ data.size }}", "abcdef", 6],
    ["{{ data | strip | truncate: 5 }}", "  abcdefgh  ", "ab..."],
    ["{{ data.x | default: 'none' }}", { x: "" }, "none"],
    ["{{ data | split: '-' }}", "1-2", ["1", "2"]],
  ])("%s on %j → %j", (template, data, expected) => {
    expect(evaluate(template, data)).toEqual(expected);
  });
});

describe("default expressions of the token types (wire-format §4.2)", () => {
  it("card: fingerprint and the default mask object", () => {
    expect(evaluate("{{ data.number }}", CARD)).toBe("3622720627165567");
    const mask = {
      number: "{{ data.number | reveal_last: 4 }}",
      expiration_month: "{{ data.expiration_month }}",
      expiration_year: "{{ data.expiration_year }}",
    };
    const masked = Object.fromEntries(Object.entries(mask).map(([k, t]) => [k, evaluate(t, CARD)]));
    expect(masked).toEqual({ number: "XXXXXXXXXXXX5567", expiration_month: 10, expiration_year: 2028 });
  });

  it("bank: the fingerprint renders one string", () => {
    const bank = { routing_number: "021000021", account_number: "000123456789" };
    expect(evaluate("{{ data.account_number }}|{{ data.routing_number }}", bank)).toBe(
      "000123456789|021000021",
    );
    expect(evaluate("{{ data.account_number | reveal_last: 4 }}", bank)).toBe("XXXXXXXX6789");
  });

  it("social security number: the three default search indexes and the mask", () => {
    const ssn = "123-45-6789";
    expect(
      ["{{ data }}", "{{ data | remove: '-' }}", "{{ data | last4 }}"].map((t) => evaluate(t, ssn)),
    ).toEqual(["123-45-6789", "123456789", "6789"]);
    expect(evaluate("{{ data | reveal_last: 4 }}", ssn)).toBe("XXX-XX-6789");
  });

  it("token: the fingerprint of complex data is its JSON", () => {
    expect(evaluate("{{ data | stringify }}", { a: [1, "x"] })).toBe('{"a":[1,"x"]}');
  });

  it("metadata is in scope next to data", () => {
    expect(evaluate("{{ data }}:{{ metadata.user }}", "x", { user: "u1" })).toBe("x:u1");
  });
});

describe("raw values and rendered text", () => {
  it.each<[string, unknown, unknown]>([
    ["{{ data | to_number }}", "42", 42],
    ["  {{ data | to_number }}\n", "42", 42],
    ["{{- data -}}", "x", "x"],
    ["{{ data.number }}", CARD, "3622720627165567"],
    ["{{ data.expiration_year }}", CARD, 2028],
    ["{{ data }}", CARD, CARD],
    ["{{ data.list }}", { list: [1, null] }, [1, null]],
    ["{{ data.x }}", { x: null }, null],
    ["{{ data | to_boolean }}", "true", true],
    ["x{{ data }}", "1", "x1"],
    ["x{{ data | to_number }}", "1", "x1"],
    ["{{ data }}{{ data }}", 1, "11"],
    ["{{ data.x }}-", { x: null }, "-"],
    ["card: {{ data }}", { a: 1 }, 'card: {"a":1}'],
    ["{{ data | split: '-' }}!", "1-2", '["1","2"]!'],
    ["no outputs", "x", "no outputs"],
    ["", "x", ""],
  ])("%j on %j → %j", (template, data, expected) => {
    expect(evaluate(template, data)).toEqual(expected);
  });
});

describe("lock-down (DESIGN §1)", () => {
  it.each([
    ["{% include 'x' %}", /tags are not allowed.*'include' at offset 0/],
    ["{% render 'x' %}", /'render'/],
    ["{% layout 'x' %}", /'layout'/],
    ["a {% assign a = 1 %}{{ a }}", /'assign' at offset 2/],
    ["{% for c in data %}{{ c }}{% endfor %}", /'for'/],
    ["{% for %}", /'for'/],
    ["{% if data %}x{% endif %}", /'if'/],
    ["{% raw %}{{ data }}{% endraw %}", /'raw'/],
    ["{% capture x %}{{ data }}{% endcapture %}", /'capture'/],
    ["{% liquid echo data %}", /'liquid'/],
    ["{% echo data %}", /'echo'/],
    ["{%- # comment -%}", /'#'/],
    ["{{ data | no_such_filter }}", /^unknown filter 'no_such_filter'$/],
    ["{{ data | where_exp: 'c', 'c == 1' }}", /^unknown filter 'where_exp'$/],
    ["{{ secret }}", /^unknown variable 'secret'$/],
    ["{{ data | append: token.data }}", /^unknown variable 'token'$/],
    ["{{ constructor }}", /^unknown variable 'constructor'$/],
    ["{{ data", /^syntax error at offset 0: output "{{ data" not closed$/],
    ["{{ data }", /^syntax error at offset 0/],
    ["{{ data[ }}", /^syntax error at offset 8/],
    ["{{ data | replace: 'a' 'b' }}", /^syntax error at offset 23/],
    ["{{ }}", /^syntax error/],
    ["{% include", /^syntax error/],
  ])("check(%j) rejects it", (template, message) => {
    expect(expressionError(() => engine.check(template)).message).toMatch(message);
    const failure = expressionError(() => evaluate(template, SECRET));
    expect(failure.message).toMatch(message);
    expect(failure.message).not.toContain(SECRET);
  });

  it.each<[string, unknown, RegExp]>([
    ["{{ data.missing }}", { number: SECRET }, /^unknown variable 'data.missing'$/],
    ["{{ data.number.first }}", { number: SECRET }, /^unknown variable 'data.number.first'$/],
    ["{{ data.length }}", SECRET, /^unknown variable 'data.length'$/],
    ["{{ data[0] }}", SECRET, /^unknown variable 'data\[0\]'$/],
    ["{{ data.constructor }}", { number: SECRET }, /^unknown variable 'data.constructor'$/],
    ["{{ data.constructor.name }}", SECRET, /^unknown variable 'data.constructor.name'$/],
    ["{{ data.__proto__ }}", { number: SECRET }, /^unknown variable 'data.__proto__'$/],
    ["{{ data['__proto__'] }}", { number: SECRET }, /^unknown variable/],
    ["{{ data.number.toString }}", { number: SECRET }, /^unknown variable/],
    ["{{ data.list.map }}", { list: [SECRET] }, /^unknown variable/],
    ["{{ data[data.number] }}", { number: SECRET }, /^unknown variable 'data\[data.number\]'$/],
    ["{{ data | append: data[data] }}", SECRET, /^unknown variable 'data\[data\]'$/],
    ["{{ data.list | where: data.k }}", { list: [{ a: 1 }], k: `x${SECRET}` }, /^unknown variable$/],
    ["{{ data.list | where: data.k }}", { list: [{ a: 1 }], k: `${SECRET} )(` }, /^unknown variable$/],
    ["{{ data.list | group_by: data.k }}", { list: [{ a: 1 }], k: `x${SECRET}` }, /^unknown variable$/],
    ["{{ data.list | find: data.k, 1 }}", { list: [{ a: 1 }], k: `x${SECRET}` }, /^unknown variable$/],
    ["{{ metadata.user }}", SECRET, /^unknown variable 'metadata.user'$/],
    ["{{ data | to_number }}", SECRET + "x", /^filter to_number: value is not a number$/],
    ["{{ data | json: data }}", SECRET, /^filter json: a JSONPath must start with \$$/],
    ["{{ data | card_exp: data }}", CARD, /^filter card_exp: format must be one of/],
  ])("evaluate(%j) fails without showing the data", (template, data, message) => {
    engine.check(template);
    const failure = expressionError(() => evaluate(template, data));
    expect(failure.message).toMatch(message);
    expect(failure.message).not.toContain(SECRET);
    expect(failure.stack ?? "").not.toContain(SECRET);
    expect(failure.cause).toBeUndefined();
  });

  it("bounds the template length", () => {
    const small = createExpressionEngine({ maxTemplateLength: 20 });
    small.check("{{ data | last4 }}");
    expect(expressionError(() => small.check(`{{ data }}${" ".repeat(11)}`)).message).toBe(
      "template too long (at most 20 characters)",
    );
    expect(expressionError(() => engine.check(`{{ data }}${"x".repeat(4096)}`)).message).toMatch(/too long/);
  });

  it("bounds the output, as text and as a raw value", () => {
    const data = SECRET.repeat(100);
    const appends = `{{ data${" | append: data".repeat(60)} }}`;
    expect(appends.length).toBeLessThan(4096);
    expect(expressionError(() => evaluate(appends, data)).message).toBe("output too large");
    expect(expressionError(() => evaluate(`-${appends}`, data)).message).toBe("output too large");
    expect(expressionError(() => evaluate("{{ data }}".repeat(60), data)).message).toBe("output too large");
    const small = createExpressionEngine({ maxOutputLength: 10 });
    expect(small.evaluate("{{ data }}", { data: "12345678" })).toBe("12345678");
    expect(expressionError(() => small.evaluate("{{ data }}", { data: "123456789" })).message).toBe(
      "output too large",
    );
    expect(expressionError(() => small.evaluate("{{ data }}", { data: { a: 12345 } })).message).toBe(
      "output too large",
    );
    expect(expressionError(() => small.evaluate("x{{ data }}", { data: "1234567890" })).message).toBe(
      "output too large",
    );
  });

  it("bounds the memory of intermediate values", () => {
    for (const template of [
      "{{ data | pad_left: 1000000000, '0' | size }}",
      "{{ (1..100000000) | join: '' | size }}",
      `{{ data${" | append: data | append: data | remove: 'x'".repeat(20)} | size }}`,
    ]) {
      expect(expressionError(() => evaluate(template, SECRET.repeat(200))).message).toBe("output too large");
    }
  });

  it("bounds the render time, also within a single output", () => {
    const data = Array.from({ length: 20_000 }, (_, i) => String.fromCharCode(97 + ((i * 7919) % 26))).join(
      "",
    );
    const template = `{{ data | split: '' | sort | join: '' | size }}`;
    const engineWithin = (renderTimeLimitMs: number) =>
      createExpressionEngine({ renderTimeLimitMs, maxOutputLength: 1_000_000 });
    expect(expressionError(() => engineWithin(1).evaluate(template, { data })).message).toBe("took too long");
    expect(expressionError(() => engineWithin(1).evaluate(`${template}-`, { data })).message).toBe(
      "took too long",
    );
    expect(engineWithin(10_000).evaluate(template, { data })).toBe(20_000);
  });

  it("keeps answering the same way past the cache bound", () => {
    // A render time limit no pause of a loaded machine reaches: this is about the cache, not about time.
    const patient = createExpressionEngine({ renderTimeLimitMs: 60_000 });
    const evaluateAt = (template: string, data: string) => patient.evaluate(template, { data });
    for (let i = 0; i < 1100; i++) expect(evaluateAt(`{{ data | append: '${i}' }}`, "a")).toBe(`a${i}`);
    expect(evaluateAt("{{ data | append: '0' }}", "b")).toBe("b0");
    for (let i = 0; i < 3; i++)
      expect(expressionError(() => patient.check("{{ nope }}")).message).toMatch(/nope/);
  });
});

describe("properties", () => {
  const codePoints = (s: string) => [...s];
  const textFrom = (chars: string) =>
    fc.array(fc.constantFrom(...chars), { maxLength: 40 }).map((a) => a.join(""));
  const cardText = textFrom("0123456789abcdefghijklmnopqrstuvwyzABCDEFGHIJKLMNOPQRSTUVWYZ -/.é");
  const isLetterOrDigit = (c: string) => /[\p{L}\p{N}]/u.test(c);

  it("last4 keeps at most the last 4 characters", () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        const out = evaluate("{{ data | last4 }}", s) as string;
        expect(out).toBe(codePoints(s).slice(-4).join(""));
      }),
    );
  });

  it("reveal_last keeps the length and delimiters and shows at most N letters or digits", () => {
    fc.assert(
      fc.property(cardText, fc.nat({ max: 20 }), (s, n) => {
        const out = codePoints(evaluate(`{{ data | reveal_last: ${n} }}`, s) as string);
        const chars = codePoints(s);
        expect(out).toHaveLength(chars.length);
        const shown = chars.filter((c, i) => isLetterOrDigit(c) && out[i] === c);
        expect(shown.length).toBeLessThanOrEqual(n);
        chars.forEach((c, i) => {
          if (!isLetterOrDigit(c)) expect(out[i]).toBe(c);
          else expect([c, "X"]).toContain(out[i]);
        });
      }),
    );
  });

  it("reveal keeps the length and shows at most first + last characters outside preserve_chars", () => {
    fc.assert(
      fc.property(cardText, fc.nat({ max: 10 }), fc.nat({ max: 10 }), (s, first, last) => {
        const out = codePoints(evaluate(`{{ data | reveal: ${first}, ${last}, '#', '-' }}`, s) as string);
        const chars = codePoints(s);
        expect(out).toHaveLength(chars.length);
        const shown = chars.filter((c, i) => c !== "-" && out[i] === c);
        expect(shown.length).toBeLessThanOrEqual(Math.min(first + last, Math.max(chars.length - 1, 0)));
      }),
    );
  });

  const luhnCard = fc
    .tuple(
      fc.integer({ min: 12, max: 19 }),
      fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 19, maxLength: 19 }),
    )
    .map(([length, digits]) => {
      const body = digits.slice(0, length - 1).join("");
      const check = [...Array(10).keys()].find((d) => luhnValid(`${body}${d}`));
      return `${body}${check}`;
    });

  it("alias_card yields a Luhn-valid number of the same length, keeping the BIN and last 4 on request", () => {
    fc.assert(
      fc.property(luhnCard, fc.boolean(), fc.boolean(), (card, bin, last4) => {
        const out = evaluate(`{{ data | alias_card: ${bin}, ${last4} }}`, card) as string;
        expect(out).toMatch(/^\d+$/);
        expect(out).toHaveLength(card.length);
        expect(luhnValid(out)).toBe(true);
        const binLength = card.length >= 16 ? 8 : 6;
        if (bin) expect(out.slice(0, binLength)).toBe(card.slice(0, binLength));
        if (last4) expect(out.slice(-4)).toBe(card.slice(-4));
      }),
    );
  });

  it("alias_preserve_format keeps character classes and delimiters", () => {
    const classOf = (c: string) =>
      /[0-9]/.test(c) ? "digit" : /\p{Lu}/u.test(c) ? "upper" : /\p{L}/u.test(c) ? "lower" : c;
    fc.assert(
      fc.property(cardText, fc.nat({ max: 5 }), fc.nat({ max: 5 }), (s, first, last) => {
        const out = codePoints(
          evaluate(`{{ data | alias_preserve_format: ${first}, ${last} }}`, s) as string,
        );
        const chars = codePoints(s);
        expect(out).toHaveLength(chars.length);
        chars.forEach((c, i) => expect(classOf(out[i] ?? "")).toBe(classOf(c)));
        if (first + last < chars.length) {
          expect(out.slice(0, first)).toEqual(chars.slice(0, first));
          if (last > 0) expect(out.slice(-last)).toEqual(chars.slice(-last));
        }
      }),
    );
  });

  it("pad_left reaches the requested length and keeps the value at its end", () => {
    fc.assert(
      fc.property(fc.string(), fc.nat({ max: 200 }), (s, length) => {
        const out = evaluate(`{{ data | pad_left: ${length}, '*' }}`, s) as string;
        expect(codePoints(out).length).toBeGreaterThanOrEqual(length);
        expect(out.endsWith(s)).toBe(true);
      }),
    );
  });

  it("stringify round-trips through JSON.parse", () => {
    fc.assert(
      fc.property(
        fc.jsonValue().filter((v) => v !== null),
        (value) => {
          const out = evaluate("{{ data | stringify }}", value) as string;
          expect(JSON.parse(out)).toEqual(JSON.parse(JSON.stringify(value)));
        },
      ),
    );
  });

  const fragments = [
    " ",
    ...`{{ }} {% %} | : , ' " . [ ] ( ) .. - data metadata 0 1 9 a z list k`.split(" "),
    ..."last4 reveal_last reveal card_mask alias_card append prepend split join size stringify".split(" "),
    ..."json '$.a' pad_left to_number replace slice first upcase where group_by map find sort".split(" "),
    ..."constructor __proto__ include assign for".split(" "),
  ];
  const template = fc.array(fc.constantFrom(...fragments), { maxLength: 60 }).map((parts) => parts.join(""));
  const valid = [
    "{{ data | reveal_last: 4 }}",
    "{{ data.a | json: '$.b[0]' }}",
    "a{{ data | append: data }}b",
  ];
  const mutated = fc
    .tuple(fc.constantFrom(...valid), fc.nat(), fc.nat({ max: 3 }), fc.string({ maxLength: 3 }))
    .map(
      ([t, at, cut, insert]) =>
        t.slice(0, at % (t.length + 1)) + insert + t.slice((at % (t.length + 1)) + cut),
    );
  const operand = fc.constantFrom(
    ..."data data.a data.list data[0] data.list[0].a metadata.k data.size (1..5) nil".split(" "),
    ..."'x' '$.a' 'MM/YY' '-' '' 5 -1 99999999 1.5 true".split(" "),
  );
  const filterNames = [
    ..."last4 reveal_last reveal card_mask card_bin card_exp pad_left pad_right json to_string".split(" "),
    ..."to_number to_boolean alias_preserve_format alias_preserve_length alias_card append split".split(" "),
    ..."join slice replace remove where map sort first date times truncate default size uniq".split(" "),
    ..."concat base64_decode url_decode stringify".split(" "),
  ];
  const filter = fc
    .tuple(fc.constantFrom(...filterNames), fc.array(operand, { maxLength: 3 }))
    .map(([name, args]) => (args.length === 0 ? name : `${name}: ${args.join(", ")}`));
  const output = fc
    .tuple(operand, fc.array(filter, { maxLength: 6 }))
    .map(([value, filters]) => `{{ ${[value, ...filters].join(" | ")} }}`);
  const outputs = fc.array(fc.oneof(output, fc.constantFrom("x", " ")), { minLength: 1, maxLength: 3 });
  const structured = outputs.map((parts) => parts.join(""));
  const scopes = fc.constantFrom<ExpressionScope>(
    { data: SECRET },
    { data: { a: SECRET, list: [SECRET] }, metadata: { k: SECRET } },
    { data: [SECRET, 0] },
    { data: { list: [{ a: SECRET }, { k: 1 }], k: SECRET } },
    { data: { number: SECRET, expiration_month: 1, expiration_year: 2030 } },
    { data: null },
  );

  it("check throws nothing but ExpressionError, on any text", () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 200 }), template, mutated), (text) => {
        try {
          engine.check(text);
        } catch (error) {
          expect(error).toBeInstanceOf(ExpressionError);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("evaluate throws nothing but ExpressionError, never shows the data in it, and returns promptly", () => {
    fc.assert(
      fc.property(fc.oneof(template, mutated, structured), scopes, (text, scope) => {
        const started = performance.now();
        try {
          engine.evaluate(text, scope);
        } catch (error) {
          expect(error).toBeInstanceOf(ExpressionError);
          expect((error as Error).message).not.toContain(SECRET);
        }
        expect(performance.now() - started).toBeLessThan(1000);
      }),
      { numRuns: 1000 },
    );
  });
});

describe("templates evaluated without liquidjs", () => {
  /** Their shape; each is also every built-in default of that shape (token-types.ts). */
  const direct = [
    "{{ data }}",
    "{{ data | stringify }}",
    "{{ data | json_stringify }}",
    "{{ data | last4 }}",
    "{{ data | reveal_last: 4 }}",
    "{{ data | remove: '-' }}",
    "{{ data.number }}",
    "{{ data.number | reveal_last: 4 }}",
    "{{ data.account_number | reveal_last: 4 }}",
    "{{ data.expiration_month }}",
    "{{ data.size }}",
    "{{ data.number | last4 }}",
    "{{ data.number | remove: '-' }}",
  ];
  /** The same template with one more space: liquidjs reads it alike, but it no longer has the direct shape. */
  const throughLiquid = (template: string) => template.replace("{{ ", "{{  ");

  const outcome = (evaluator: ReturnType<typeof createExpressionEngine>, template: string, data: unknown) => {
    try {
      return { value: evaluator.evaluate(template, { data }) };
    } catch (error) {
      expect(error).toBeInstanceOf(ExpressionError);
      return { error: (error as Error).message };
    }
  };
  const digits = fc.stringMatching(/^[0-9 -]{0,24}$/);
  const data = fc.oneof(
    fc.jsonValue(),
    digits,
    fc.record(
      {
        number: fc.oneof(digits, fc.jsonValue()),
        account_number: fc.oneof(digits, fc.integer()),
        expiration_month: fc.oneof(fc.integer({ min: 1, max: 12 }), fc.string()),
        size: fc.jsonValue(),
      },
      { requiredKeys: [] },
    ),
    fc.array(digits),
  );

  it("give the same value or the same error as liquidjs, for any data", () => {
    fc.assert(
      fc.property(fc.constantFrom(...direct), data, (template, value) => {
        expect(outcome(engine, template, value)).toEqual(outcome(engine, throughLiquid(template), value));
      }),
      { numRuns: 2000 },
    );
  });

  it("keep the output and memory limits", () => {
    const small = createExpressionEngine({ maxOutputLength: 10 });
    for (const template of direct) {
      for (const value of ["12345678901", { number: "1234-5678-9012" }, ["1", "2"]]) {
        expect(outcome(small, template, value)).toEqual(outcome(small, throughLiquid(template), value));
      }
    }
  });
});
