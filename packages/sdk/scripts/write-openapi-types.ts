import { writeFileSync } from "node:fs";
import { GENERATED_TYPES_PATH, generateOpenApiTypes } from "./openapi-types.js";

// Second half of `npm run openapi`: the SDK's wire types from the openapi.json the first half just wrote.
writeFileSync(GENERATED_TYPES_PATH, await generateOpenApiTypes());
process.stdout.write(`wrote ${GENERATED_TYPES_PATH}\n`);
