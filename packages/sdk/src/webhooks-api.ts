import { fromWire } from "./case.js";
import type { Transport } from "./http.js";
import type { WebhookSecret } from "./types.js";

/**
 * The tenant's webhook signing secret, which signs the webhooks of asynchronous reactor invocations. Needs a
 * management key holding `webhook:read` (to read it) or `webhook:update` (to rotate it). Reached as
 * `client.webhooks`.
 *
 * @example
 * const { secret } = await admin.webhooks.getSecret();
 * const event = await verifyWebhook(rawBody, request.headers, secret);
 */
export class Webhooks {
  readonly #transport: Transport;

  /** @internal Built by {@link TesseraClient}. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * The current secret (`whsec_…`), its version, and after a rotation until when the previous one still signs.
   *
   * @example
   * const { secret, version } = await admin.webhooks.getSecret();
   */
  async getSecret(): Promise<WebhookSecret> {
    return fromWire<WebhookSecret>(await this.#transport.send({ method: "GET", path: "/webhooks/secret" }));
  }

  /**
   * Replaces the secret. For 24 hours messages carry a signature under each secret, so receivers can switch to the
   * new one without dropping a message. Never retried: a second rotation would end the overlap.
   *
   * @example
   * const { secret, previousValidUntil } = await admin.webhooks.rotateSecret();
   */
  async rotateSecret(): Promise<WebhookSecret> {
    return fromWire<WebhookSecret>(
      await this.#transport.send({ method: "POST", path: "/webhooks/secret/rotate" }),
    );
  }
}
