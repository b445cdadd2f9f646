import { fromWire, toWire } from "./case.js";
import type { Transport } from "./http.js";
import type { CreatedTenant, CreateTenantInput, ShreddedTenant, Tenant } from "./types.js";

/**
 * The Tenants API. Reached as `client.tenants`.
 *
 * @example
 * const tenant = await client.tenants.getSelf();
 */
export class Tenants {
  readonly #transport: Transport;

  /** @internal Built by {@link TesseraClient}. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Creates a tenant and its first management Application, whose key is in `application.key` and nowhere else.
   * Needs `tenant:create`, which only the bootstrap key holds.
   *
   * @example
   * const { id, application } = await admin.tenants.create({ name: "Acme" });
   * const acme = new TesseraClient({ baseUrl, apiKey: application.key });
   */
  async create(input: CreateTenantInput): Promise<CreatedTenant> {
    const body = await this.#transport.send({ method: "POST", path: "/tenants", body: toWire(input) });
    return fromWire<CreatedTenant>(body);
  }

  /**
   * Shreds a tenant: destroys its keys, so that nothing it stored can be decrypted again, and deletes its data
   * and Applications; its audit log remains. Only the bootstrap tenant's management key may, and not for the
   * bootstrap tenant itself.
   *
   * @example
   * const { destroyed } = await admin.tenants.shred(tenantId);
   */
  async shred(id: string): Promise<ShreddedTenant> {
    const body = await this.#transport.send({ method: "DELETE", path: `/tenants/${encodeURIComponent(id)}` });
    return fromWire<ShreddedTenant>(body);
  }

  /**
   * Gets the tenant this client's API key belongs to. Needs `tenant:read`.
   *
   * @example
   * const { id, name } = await client.tenants.getSelf();
   */
  async getSelf(): Promise<Tenant> {
    return fromWire<Tenant>(await this.#transport.send({ method: "GET", path: "/tenants/self" }));
  }
}
