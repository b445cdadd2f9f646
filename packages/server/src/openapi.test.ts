import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { openApiDocument } from "./main.js";
import { OPENAPI_PATH, formatOpenApi } from "./openapi-file.js";

describe("openapi.json", () => {
  it("matches the routes (run `npm run openapi` after changing a route or schema)", async () => {
    expect(readFileSync(OPENAPI_PATH, "utf8")).toBe(formatOpenApi(await openApiDocument()));
  });
});
