import { Access } from "./access.js";
import { Applications } from "./applications.js";
import { Transport, type TesseraClientOptions } from "./http.js";
import { Reactors } from "./reactors.js";
import { Logs } from "./logs.js";
import { Sessions } from "./sessions.js";
import { Tenants } from "./tenants.js";
import { Webhooks } from "./webhooks-api.js";
import { detokenize, tokenize } from "./tokenize.js";
import { Tokens } from "./tokens.js";
import type { TokenizeInput, Tokenized } from "./types.js";

export type { TesseraClientOptions };

/**
 * A typed client for the Tessera API. Requests and results use camelCase; the wire's snake_case is converted
 * in one place, and token data, metadata and masks are passed through untouched.
 *
 * A response outside 2xx throws a {@link TesseraError} (a subclass per common status); no response at all
 * (unreachable server, timeout) throws {@link TesseraConnectionError}. Idempotent calls answered with 429, 502,
 * 503 or 504 are retried with jittered backoff, honouring `Retry-After`.
 *
 * @example
 * const client = new TesseraClient({ baseUrl: "http://localhost:3000", apiKey: process.env.SVC_API_KEY! });
 * const token = await client.tokens.create({ type: "social_security_number", data: "123-45-6789" });
 */
export class TesseraClient {
  /** Access decisions, explained. */
  readonly access: Access;
  /** Applications and their API keys. */
  readonly applications: Applications;
  /** The audit log. */
  readonly logs: Logs;
  /** Reactors: code stored in the vault, and its configuration. */
  readonly reactors: Reactors;
  /** Short-lived keys for browsers and apps: created with a public key, authorized with a private one. */
  readonly sessions: Sessions;
  /** The caller's tenant, and new tenants. */
  readonly tenants: Tenants;
  /** Tokens one at a time, lists and search. */
  readonly tokens: Tokens;
  /** The secret that signs the webhooks of asynchronous reactor invocations. */
  readonly webhooks: Webhooks;
  readonly #transport: Transport;

  constructor(options: TesseraClientOptions) {
    this.#transport = new Transport(options);
    this.access = new Access(this.#transport);
    this.applications = new Applications(this.#transport);
    this.logs = new Logs(this.#transport);
    this.reactors = new Reactors(this.#transport);
    this.sessions = new Sessions(this.#transport);
    this.tenants = new Tenants(this.#transport);
    this.tokens = new Tokens(this.#transport);
    this.webhooks = new Webhooks(this.#transport);
  }

  /**
   * Creates many tokens in one call and answers in the body's shape. An object with a string `type` is a token
   * request (the fields of `tokens.create`) and becomes the created {@link Token}; any other string, number or
   * boolean becomes a generic token and is replaced by its id; other objects and arrays are walked, their keys
   * kept as written. All or nothing: if one request fails, no token is created. Never retried.
   *
   * @example
   * const { card, phones } = await client.tokenize({
   *   card: { type: "card_number", data: "4111111111111111", metadata: { customer: "cus_123" } },
   *   phones: ["+1 555 0100", "+1 555 0101"],
   * });
   * console.log(card.id, card.data, phones[0]); // a Token, then a token id
   */
  tokenize<const T extends TokenizeInput>(body: T): Promise<Tokenized<T>> {
    return tokenize(this.#transport, body) as Promise<Tokenized<T>>;
  }

  /**
   * Replaces each `{{ <token id> }}` expression anywhere in `body` with the token's data as the caller may read
   * it: a string that is exactly one expression becomes the data with its JSON type, an expression inside a
   * longer string is interpolated. The rest of the body comes back as sent, keys untouched.
   *
   * @example
   * const { number, text } = await client.detokenize<{ number: string; text: string }>({
   *   number: `{{ ${cardToken.id} }}`,
   *   text: `Card {{ ${cardToken.id} }} on file`,
   * });
   */
  detokenize<T = unknown>(body: unknown): Promise<T> {
    return detokenize(this.#transport, body) as Promise<T>;
  }
}
