import { describe, expect, it } from "vitest";
import { TOKEN_USER_DATA, fromApiJson, toApiJson } from "./wire.js";

describe("API JSON ↔ SDK", () => {
  const wire = {
    id: "t1",
    tenant_id: "x",
    search_indexes: ["{{ data }}"],
    data: { account_number: "1", holderName: "A" },
    metadata: { customer_id: "c", camelCase: "v" },
    mask: { account_number: "{{ data.account_number | last4 }}" },
    _extras: { deduplicated: true },
  };

  it("renames the API's keys but never the caller's inside data, metadata and mask", () => {
    const sdk = fromApiJson<Record<string, unknown>>(wire, TOKEN_USER_DATA);
    expect(sdk).toEqual({
      id: "t1",
      tenantId: "x",
      searchIndexes: ["{{ data }}"],
      data: wire.data,
      metadata: wire.metadata,
      mask: wire.mask,
      _extras: { deduplicated: true },
    });
    expect(toApiJson(sdk, TOKEN_USER_DATA)).toEqual(wire);
  });

  it("keeps a key named __proto__ a key, never the object's prototype", () => {
    const parsed: unknown = JSON.parse('{"name":"x","__proto__":{"polluted":true}}');
    const sdk = fromApiJson<Record<string, unknown>>(parsed);
    expect(Object.getPrototypeOf(sdk)).toBe(Object.prototype);
    expect(sdk.polluted).toBeUndefined();
    expect(Object.keys(sdk)).toHaveLength(2);
    const back = toApiJson(JSON.parse('{"metadata":{"__proto__":"v"}}'), TOKEN_USER_DATA) as Record<
      string,
      object
    >;
    expect(Object.keys(back.metadata!)).toEqual(["__proto__"]);
  });
});
