import { describe, expect, it } from "vitest";
import { fromWire, pageFromWire, toWire } from "../src/case.js";

// The converter alone: the user-data exclusion has no endpoint to exercise it yet.
describe("case conversion", () => {
  const userData = new Set(["data", "metadata"]);

  it("renames keys recursively through objects and arrays, and leaves values alone", () => {
    expect(
      fromWire({ tenant_id: "t", rules: [{ search_indexes: ["a_b"] }], nested: { created_at: "x" } }),
    ).toEqual({
      tenantId: "t",
      rules: [{ searchIndexes: ["a_b"] }],
      nested: { createdAt: "x" },
    });
    const at = new Date("2030-01-01T00:00:00.000Z");
    expect(toWire({ expiresAt: at, rules: [{ searchIndexes: null }] })).toEqual({
      expires_at: at,
      rules: [{ search_indexes: null }],
    });
    expect(JSON.stringify(toWire({ expiresAt: at }))).toBe('{"expires_at":"2030-01-01T00:00:00.000Z"}');
  });

  it("copies the values of user-data keys untouched, in both directions", () => {
    const wire = {
      id: "1",
      data: { card_number: "4242", nested: { exp_month: 1 } },
      metadata: { order_id: "o" },
    };
    expect(fromWire(wire, userData)).toEqual({ ...wire });
    const sdk = { searchIndexes: [], data: { cardNumber: "4242" } };
    expect(toWire(sdk, userData)).toEqual({ search_indexes: [], data: { cardNumber: "4242" } });
    expect(fromWire([wire], userData)).toEqual([wire]);
  });

  it("converts a page envelope and each item, whose own user data stays untouched", () => {
    const page = {
      pagination: { total_items: 1, page_number: 1, page_size: 20, total_pages: 1 },
      data: [{ created_at: "x", data: { card_number: "4242" } }],
    };
    expect(pageFromWire(page, userData)).toEqual({
      pagination: { totalItems: 1, pageNumber: 1, pageSize: 20, totalPages: 1 },
      data: [{ createdAt: "x", data: { card_number: "4242" } }],
    });
  });
});
