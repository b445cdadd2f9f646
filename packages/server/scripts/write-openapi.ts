import { writeFileSync } from "node:fs";
import { openApiDocument } from "../src/main.js";
import { OPENAPI_PATH, formatOpenApi } from "../src/openapi-file.js";

// `npm run openapi`: regenerates the committed openapi.json; a test fails when it drifts from the routes.
writeFileSync(OPENAPI_PATH, formatOpenApi(await openApiDocument()));
process.stdout.write(`wrote ${OPENAPI_PATH}\n`);
