import { fromWire, toWire } from "./case.js";
import type { Transport } from "./http.js";
import type { AccessExplanation, ExplainAccessInput } from "./types.js";

/**
 * Access decisions, explained (`POST /access/explain`). Needs a management key holding `application:read`.
 * Reached as `client.access`.
 *
 * @example
 * const { allowed, transform, summary } = await admin.access.explain({
 *   applicationId: backend.id,
 *   tokenId: token.id,
 *   permission: "token:read",
 * });
 */
export class Access {
  readonly #transport: Transport;

  /** @internal Built by {@link TesseraClient}. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Which of an Application's rules decides `permission` on a token (`tokenId`) or on a token in `containers`,
   * as the token routes decide it: the deciding rule (`decidedBy`), whether it allows, the transform, and every
   * rule tried before it with the reason it did not decide (`passedOver`). Never returns token data. A read, so
   * it is retried like a GET.
   *
   * @example
   * const explanation = await admin.access.explain({
   *   applicationId: backend.id,
   *   containers: ["/pci/high/"],
   *   permission: "token:use",
   * });
   * for (const rule of explanation.passedOver) console.log(rule.detail);
   */
  async explain(input: ExplainAccessInput): Promise<AccessExplanation> {
    const body = await this.#transport.send({
      method: "POST",
      path: "/access/explain",
      body: toWire(input),
      idempotent: true,
    });
    return fromWire<AccessExplanation>(body);
  }
}
