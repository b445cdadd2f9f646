import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nearValidQuery } from "../../test/fuzz-helpers.js";
import { QueryError, parseQuery } from "./parser.js";
import { countDataTerms, queryShape } from "./shape.js";

describe("queryShape", () => {
  it.each([
    ["", ""],
    ['data:"123-45-6789"', "data:?"],
    ["type:social_security_number AND metadata.region:eu", "type:? AND metadata.region:?"],
    ["id:1 type:token OR type:bank", "id:? AND type:? OR type:?"],
    ['(id:x OR id:y) AND NOT container:"/pci/*"', "(id:? OR id:?) AND NOT container:?"],
    ["!(type:token type:bank)", "NOT (type:? AND type:?)"],
    ["-fingerprint:abc", "NOT fingerprint:?"],
    ["created_at:[2025-01-01 TO *]", "created_at:[? TO *]"],
    ["modified_at:{* TO 2025-02-01T00:00:00Z}", "modified_at:[* TO ?}"],
  ])("%s → %s", (query, shape) => {
    expect(queryShape(parseQuery(query))).toBe(shape);
  });

  it("keeps no value of a query", () => {
    const value = fc.stringMatching(/^[A-Za-z0-9]{6,12}$/);
    const field = fc.constantFrom("data", "metadata.k", "id", "type", "container");
    fc.assert(
      fc.property(
        fc.array(fc.tuple(field, value), { minLength: 1, maxLength: 6 }),
        fc.constantFrom(" AND ", " OR ", " "),
        (terms, join) => {
          const shape = queryShape(parseQuery(terms.map(([f, v]) => `${f}:"SECRET${v}"`).join(join)));
          expect(shape).not.toContain("SECRET");
        },
      ),
    );
  });

  it("is a query itself, whose shape is itself, for every query the parser accepts", () => {
    fc.assert(
      fc.property(nearValidQuery(12), (query) => {
        let tree;
        try {
          tree = parseQuery(query);
        } catch (error) {
          if (error instanceof QueryError) return;
          throw error;
        }
        const shape = queryShape(tree);
        expect(queryShape(parseQuery(shape))).toBe(shape);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe("countDataTerms", () => {
  it.each<[string | null | undefined, number]>([
    [undefined, 0],
    [null, 0],
    ["", 0],
    ["type:token", 0],
    ['data:"123-45-6789"', 1],
    ["data:a OR data:b OR data:c", 3],
    ["NOT data:a AND -data:b AND !(data:c OR type:token)", 3],
    ['metadata.data:x AND fingerprint:data AND container:"/data/"', 0],
    // Refused as malformed before anything is searched: nothing to charge.
    ["data:a AND (", 0],
    // Parses, then is refused for its wildcard: charged like a query that finds nothing.
    ["data:a*", 1],
  ])("%j holds %i data: terms", (query, count) => {
    expect(countDataTerms(query)).toBe(count);
  });

  it("counts every data: term however the query is built", () => {
    const term = fc.oneof(
      fc.constant({ text: "data:x", data: 1 }),
      fc.constant({ text: "type:token", data: 0 }),
      fc.constant({ text: "metadata.k:data", data: 0 }),
    );
    fc.assert(
      fc.property(
        fc.array(term, { minLength: 1, maxLength: 20 }),
        fc.constantFrom(" AND ", " OR ", " "),
        (terms, join) => {
          const query = terms.map((t, i) => (i % 3 === 2 ? `NOT (${t.text})` : t.text)).join(join);
          expect(countDataTerms(query)).toBe(terms.reduce((sum, t) => sum + t.data, 0));
        },
      ),
    );
  });
});
