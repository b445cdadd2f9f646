import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";

const here = path.dirname(fileURLToPath(import.meta.url));

/** The committed OpenAPI document at the repository root, written from the server's routes. */
export const OPENAPI_PATH = path.resolve(here, "../../../openapi.json");
/** The committed wire types the SDK's public types are derived from. */
export const GENERATED_TYPES_PATH = path.resolve(here, "../src/generated/openapi.ts");

const HEADER = `/**
 * Generated from openapi.json by openapi-typescript: do not edit by hand.
 * \`npm run openapi\` rewrites openapi.json from the server's routes, then this file from openapi.json;
 * packages/sdk/test/generated-types.test.ts fails when this file is out of date.
 */

`;

/** The text of the generated types for the committed openapi.json. */
export async function generateOpenApiTypes(): Promise<string> {
  const document = JSON.parse(readFileSync(OPENAPI_PATH, "utf8")) as Parameters<typeof openapiTS>[0];
  return HEADER + astToString(await openapiTS(document));
}
