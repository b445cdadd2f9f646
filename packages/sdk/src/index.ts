export { TesseraClient, type TesseraClientOptions } from "./client.js";
export { Access } from "./access.js";
export { Applications } from "./applications.js";
export { Logs } from "./logs.js";
export { Reactors } from "./reactors.js";
export { Sessions } from "./sessions.js";
export { Tenants } from "./tenants.js";
export { Tokens } from "./tokens.js";
export { Webhooks } from "./webhooks-api.js";
export {
  TesseraAuthenticationError,
  TesseraConflictError,
  TesseraConnectionError,
  TesseraError,
  TesseraForbiddenError,
  TesseraNotFoundError,
  TesseraRateLimitError,
  TesseraServerError,
  TesseraValidationError,
  type FieldErrors,
} from "./errors.js";
export { SDK_VERSION, type Fetch } from "./http.js";
export {
  WebhookVerificationError,
  verifyWebhook,
  type HeaderRecord,
  type HeadersLike,
  type VerifyWebhookOptions,
} from "./webhooks.js";
export type * from "./types.js";
