import { fromWire, toWire } from "./case.js";
import type { Transport } from "./http.js";
import type { AuthorizeSessionInput, Session } from "./types.js";

/**
 * Sessions (docs/sessions.md): short-lived keys for a browser or app. The page creates one with a public key and
 * hands the nonce to its backend, which authorizes it with a private key; the page then uses the session key.
 * Reached as `client.sessions`. Browser-safe: no Node module is imported on this path.
 *
 * @example
 * // In the browser, with the public key:
 * const page = new TesseraClient({ baseUrl: "https://vault.example.com", apiKey: publicKey });
 * const { sessionKey, nonce } = await page.sessions.create();
 * // On the backend, with a private key:
 * await backend.sessions.authorize({ nonce, permissions: ["token:read"] });
 */
export class Sessions {
  readonly #transport: Transport;

  /** @internal Built by {@link TesseraClient}. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Creates a session (needs a public key). The session key works only once a backend has authorized its
   * nonce, and until `expiresAt`. Never retried: each call makes a new session.
   *
   * @example
   * const { sessionKey, nonce, expiresAt } = await page.sessions.create();
   */
  async create(): Promise<Session> {
    const body = await this.#transport.send({ method: "POST", path: "/sessions" });
    return fromWire<Session>(body);
  }

  /**
   * Authorizes a session by its nonce (needs a private key), once: with top-level `permissions`, or `rules`
   * whose `conditions` pick tokens by `id` or `container`. The session never gets more than the calling
   * Application holds, now or at any later request. An unknown, used or expired nonce is a 400.
   *
   * @example
   * await backend.sessions.authorize({
   *   nonce,
   *   rules: [{ priority: 1, transform: "reveal", permissions: ["token:read"],
   *             conditions: [{ attribute: "id", operator: "equals", value: token.id }] }],
   * });
   */
  async authorize(input: AuthorizeSessionInput): Promise<void> {
    await this.#transport.send({ method: "POST", path: "/sessions/authorize", body: toWire(input) });
  }
}
