import { describe, expect, it } from "vitest";
import {
  TOKEN_USER_DATA,
  fromWire,
  pageFromWire,
  toWire,
  tokenizeToWire,
  tokenizedFromWire,
} from "../src/case.js";

// The converter alone; tokens.test.ts checks the same conversions on the wire against the real server.
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

  it("keeps a leading underscore, so that _extras stays apart from ordinary keys", () => {
    expect(fromWire({ _extras: { deduplicated: true }, tenant_id: "t" })).toEqual({
      _extras: { deduplicated: true },
      tenantId: "t",
    });
    expect(toWire({ _extras: 1 })).toEqual({ _extras: 1 });
  });

  it("renames a tokenize body's token requests only, leaving the caller's structure and user data alone", () => {
    const body = {
      fullName: "Jane",
      cards: [{ type: "card", data: { exp_month: 1 }, searchIndexes: [], mask: { exp_month: "x" } }, null],
      nested: { deepKey: { type: "token", data: "d", expiresAt: "2030-01-01T00:00:00Z" } },
      n: 1,
    };
    expect(tokenizeToWire(body)).toEqual({
      fullName: "Jane",
      cards: [{ type: "card", data: { exp_month: 1 }, search_indexes: [], mask: { exp_month: "x" } }, null],
      nested: { deepKey: { type: "token", data: "d", expires_at: "2030-01-01T00:00:00Z" } },
      n: 1,
    });
    expect(tokenizeToWire("plain")).toBe("plain");
    expect(tokenizeToWire([{ type: "token", fingerprintExpression: "x" }])).toEqual([
      { type: "token", fingerprint_expression: "x" },
    ]);
  });

  it("reads a tokenize answer by the request's shape: tokens where the requests were, the rest as sent", () => {
    const request = { fullName: "Jane", cards: [{ type: "card", data: {} }, null], n: 1 };
    const token = { id: "t", tenant_id: "x", data: { exp_month: 1 }, search_indexes: [] };
    const response = { fullName: "id-1", cards: [token, null], n: "id-2" };
    expect(tokenizedFromWire(request, response)).toEqual({
      fullName: "id-1",
      cards: [{ id: "t", tenantId: "x", data: { exp_month: 1 }, searchIndexes: [] }, null],
      n: "id-2",
    });
    expect(tokenizedFromWire({ type: "token", data: 1 }, token)).toEqual(fromWire(token, TOKEN_USER_DATA));
    expect(tokenizedFromWire(["a"], ["id"])).toEqual(["id"]);
  });
});
