export { TesseraClient, type TesseraClientOptions } from "./client.js";
export { Applications } from "./applications.js";
export { Tenants } from "./tenants.js";
export { TesseraConnectionError, TesseraError, type FieldErrors } from "./errors.js";
export { SDK_VERSION, type Fetch } from "./http.js";
export type * from "./types.js";
