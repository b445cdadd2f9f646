import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { GENERATED_TYPES_PATH, generateOpenApiTypes } from "../scripts/openapi-types.js";

// The server's openapi.test.ts ties openapi.json to the routes; this ties the SDK's wire types to openapi.json.
describe("src/generated/openapi.ts", () => {
  it("is what openapi-typescript makes of the committed openapi.json (run `npm run openapi`)", async () => {
    expect(readFileSync(GENERATED_TYPES_PATH, "utf8")).toBe(await generateOpenApiTypes());
  });
});
