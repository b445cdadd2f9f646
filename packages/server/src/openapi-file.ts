import path from "node:path";
import { fileURLToPath } from "node:url";

/** The committed OpenAPI document at the repository root; the SDK's types are generated from it. */
export const OPENAPI_PATH = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../openapi.json",
);

export function formatOpenApi(document: unknown): string {
  return JSON.stringify(document, null, 2) + "\n";
}
