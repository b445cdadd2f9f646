import { tokenizeToWire, tokenizedFromWire } from "./case.js";
import type { Transport } from "./http.js";
import type { TokenizeInput } from "./types.js";

/**
 * `POST /tokenize`: creates every token of the body at once (or none), answering in the body's shape. Typed by
 * the caller ({@link TesseraClient.tokenize}): spelling the result type out here, inside an async function,
 * makes TypeScript expand it without end.
 */
export async function tokenize(transport: Transport, body: TokenizeInput): Promise<unknown> {
  const response = await transport.send({ method: "POST", path: "/tokenize", body: tokenizeToWire(body) });
  return tokenizedFromWire(body, response);
}

/**
 * `POST /detokenize`: the body with its `{{ <token id> }}` expressions replaced by token data. Both the body and
 * the answer are the caller's own JSON, sent and returned without any renaming. A read, so it is retried.
 */
export async function detokenize(transport: Transport, body: unknown): Promise<unknown> {
  return transport.send({ method: "POST", path: "/detokenize", body, idempotent: true });
}
