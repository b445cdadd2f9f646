import { describe, expect, it } from "vitest";
import {
  APPLICATION_TYPES,
  isAllowedFor,
  PERMISSIONS,
  TOKEN_PERMISSIONS as SERVER_TOKEN_PERMISSIONS,
} from "../../server/src/access/permissions.js";
import { TRANSFORMS } from "../../server/src/access/rules.js";
import { AUDIT_ACTIONS as SERVER_AUDIT_ACTIONS } from "../../server/src/audit/types.js";
import { TOKEN_TYPES as SERVER_TOKEN_TYPES } from "../../server/src/tokens/token-types.js";
import { AUDIT_ACTIONS, TOKEN_TYPES } from "../src/catalogs.js";
import {
  PERMISSION_DESCRIPTIONS,
  PERMISSIONS_OF,
  TOKEN_PERMISSIONS,
  TRANSFORM_DESCRIPTIONS,
} from "../src/permissions.js";

// The browser bundle cannot import the server and the SDK's generated types hold no values, so the console keeps
// copies of the server's closed lists; each fails here as soon as one side changes without the other.
describe("the console's copies of the server's catalogs", () => {
  it("offers every audit action the server records, in the server's order", () => {
    expect(AUDIT_ACTIONS).toEqual(SERVER_AUDIT_ACTIONS);
  });

  it("offers every token type, in the server's order", () => {
    expect(TOKEN_TYPES).toEqual(SERVER_TOKEN_TYPES);
  });

  it("describes every permission, in the server's order, and picks out the token permissions", () => {
    expect(Object.keys(PERMISSION_DESCRIPTIONS)).toEqual(PERMISSIONS);
    expect(TOKEN_PERMISSIONS).toEqual(SERVER_TOKEN_PERMISSIONS);
  });

  it("offers each Application type the permissions the server lets it hold", () => {
    expect(Object.keys(PERMISSIONS_OF).sort()).toEqual([...APPLICATION_TYPES].sort());
    for (const type of APPLICATION_TYPES) {
      expect(PERMISSIONS_OF[type], type).toEqual(PERMISSIONS.filter((p) => isAllowedFor(type, p)));
    }
  });

  it("describes every transform", () => {
    expect(Object.keys(TRANSFORM_DESCRIPTIONS).sort()).toEqual([...TRANSFORMS].sort());
  });
});
