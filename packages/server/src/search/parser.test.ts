import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { nearValidQuery } from "../../test/fuzz-helpers.js";
import type { QueryNode } from "./ast.js";
import { MAX_QUERY_BYTES, parseQuery, QueryError } from "./parser.js";
import { toPredicate } from "./predicate.js";

const term = (offset: number, field: string, value: string, quoted = false): QueryNode => ({
  kind: "term",
  offset,
  field,
  value,
  quoted,
  valueOffset: offset + field.length + 1,
});

describe("parseQuery", () => {
  it("reads an empty or blank query as everything", () => {
    expect(parseQuery("")).toBeUndefined();
    expect(parseQuery(" \t\n ")).toBeUndefined();
  });

  it("pins terms with the offsets of the term and of its value", () => {
    expect(parseQuery("type:token")).toEqual(term(0, "type", "token"));
    expect(parseQuery('  metadata.region:"eu west"')).toEqual(term(2, "metadata.region", "eu west", true));
  });

  it("unescapes quoted values", () => {
    expect(parseQuery(String.raw`id:"a \"b\" c\\d"`)).toEqual(term(0, "id", 'a "b" c\\d', true));
  });

  it("gives AND precedence over OR, NOT over AND, and reads adjacent terms as AND", () => {
    expect(parseQuery("type:a OR type:b type:c")).toEqual({
      kind: "or",
      offset: 0,
      children: [
        term(0, "type", "a"),
        { kind: "and", offset: 10, children: [term(10, "type", "b"), term(17, "type", "c")] },
      ],
    });
    expect(parseQuery("NOT type:a AND type:b")).toEqual({
      kind: "and",
      offset: 0,
      children: [{ kind: "not", offset: 0, child: term(4, "type", "a") }, term(15, "type", "b")],
    });
  });

  it("flattens chains of one operator and collapses double negation", () => {
    expect(parseQuery("(type:a AND type:b) AND type:c")).toEqual({
      kind: "and",
      offset: 0,
      children: [term(1, "type", "a"), term(12, "type", "b"), term(24, "type", "c")],
    });
    expect(parseQuery("!-NOT type:a")).toEqual({ kind: "not", offset: 0, child: term(6, "type", "a") });
    expect(parseQuery("- !type:a")).toEqual(term(3, "type", "a"));
  });

  it("reads ranges with open and mixed bounds", () => {
    expect(parseQuery("created_at:[2024-01-01 TO *}")).toEqual({
      kind: "range",
      offset: 0,
      field: "created_at",
      lower: { text: "2024-01-01", offset: 12, inclusive: true },
      upper: undefined,
    });
    expect(parseQuery("modified_at:{* TO 2024-01-01T10:00:00Z ]")).toEqual({
      kind: "range",
      offset: 0,
      field: "modified_at",
      lower: undefined,
      upper: { text: "2024-01-01T10:00:00Z", offset: 18, inclusive: true },
    });
  });

  it("treats keywords as case-sensitive whole words", () => {
    expect(() => parseQuery("type:a and")).toThrow("expected field:value, found a word without a ':'");
    expect(() => parseQuery("type:a ORx:b")).toThrow("unknown field 'ORx'");
  });
});

describe("toPredicate", () => {
  const predicate = (query: string) => toPredicate(parseQuery(query)!, { types: ["token", "bank"] });

  it("turns dates into half-open millisecond intervals, date-only bounds covering whole UTC days", () => {
    expect(predicate("created_at:2024-01-31")).toEqual({
      kind: "during",
      column: "created_at",
      from: "2024-01-31T00:00:00.000Z",
      to: "2024-02-01T00:00:00.000Z",
    });
    expect(predicate("created_at:{2024-01-01 TO 2024-01-31]")).toEqual({
      kind: "during",
      column: "created_at",
      from: "2024-01-02T00:00:00.000Z",
      to: "2024-02-01T00:00:00.000Z",
    });
    expect(predicate("modified_at:[2024-02-29T23:59:59.9991Z TO 2024-03-01T00:00:00Z}")).toEqual({
      kind: "during",
      column: "modified_at",
      from: "2024-03-01T00:00:00.000Z",
      to: "2024-03-01T00:00:00.000Z",
    });
  });

  it("folds metadata values, lower-cases containers and keeps data as written", () => {
    expect(predicate("metadata.Region:EU")).toEqual({ kind: "metadata", key: "Region", value: "eu" });
    expect(predicate('container:"/PCI/*"')).toEqual({ kind: "container", path: "/pci/", subtree: true });
    expect(predicate('container:"/*"')).toEqual({ kind: "everything" });
    expect(predicate("data:ABC")).toEqual({ kind: "data", value: "ABC" });
  });

  it.each([
    ["created_at:2023-02-29", 11],
    ["created_at:0099-01-01", 11],
    ["created_at:2024-01-01T24:00:00Z", 11],
    ["created_at:[2024-01-01 TO 2024-01-01T10:00:00+01:00]", 26],
    ["type:Token", 5],
  ])("refuses %s at offset %d", (query, offset) => {
    expect(() => predicate(query)).toThrow(expect.objectContaining({ name: "QueryError", offset }));
  });
});

describe("parser fuzzing", () => {
  /** Parsing either succeeds or fails with a QueryError pointing inside the query (or at its limit). */
  function checkParses(text: string): void {
    const started = performance.now();
    try {
      const tree = parseQuery(text);
      if (tree !== undefined) toPredicate(tree, { types: ["token"] });
    } catch (error) {
      expect(error).toBeInstanceOf(QueryError);
      const offset = (error as QueryError).offset;
      expect(offset).toBeGreaterThanOrEqual(0);
      expect(offset).toBeLessThanOrEqual(Math.max(text.length, MAX_QUERY_BYTES));
    }
    // Linear work: even a 4 KiB query parses in far less than this.
    expect(performance.now() - started).toBeLessThan(250);
  }

  it("never fails other than with a QueryError on random text", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (text) => checkParses(text)),
      {
        numRuns: 3000,
      },
    );
  });

  it("never fails other than with a QueryError on near-valid queries", () => {
    fc.assert(
      fc.property(nearValidQuery(), (text) => checkParses(text)),
      { numRuns: 5000 },
    );
  });

  it("stays fast at the limits", () => {
    checkParses("!".repeat(4095) + "x");
    checkParses("(".repeat(4096));
    checkParses("id:" + '"'.repeat(4093));
    checkParses(Array.from({ length: 64 }, (_, i) => `id:${i}`).join(" OR "));
  });
});
