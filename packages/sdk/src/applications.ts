import { fromWire, pageFromWire, toWire } from "./case.js";
import type { Transport } from "./http.js";
import { appendPage, itemsOfEveryPage } from "./paging.js";
import type {
  Application,
  ApplicationWithKey,
  CreateApplicationInput,
  ListAllApplicationsInput,
  ListApplicationsInput,
  Page,
  UpdateApplicationInput,
} from "./types.js";

/**
 * The Applications API: the API keys of a tenant and what each may do. Needs a management key holding the
 * matching `application:*` permission. Reached as `client.applications`.
 *
 * @example
 * const app = await client.applications.create({ name: "checkout", type: "public", permissions: ["token:create"] });
 */
export class Applications {
  readonly #transport: Transport;

  /** @internal Built by {@link TesseraClient}. */
  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /**
   * Creates an Application. Its key is in the result and nowhere else: the server keeps only a hash.
   *
   * @example
   * const { id, key } = await client.applications.create({
   *   name: "backend",
   *   type: "private",
   *   rules: [{ priority: 1, container: "/pci/", transform: "mask", permissions: ["token:read"] }],
   *   expiresAt: new Date(Date.now() + 86_400_000),
   * });
   */
  async create(input: CreateApplicationInput): Promise<ApplicationWithKey> {
    const body = await this.#transport.send({ method: "POST", path: "/applications", body: toWire(input) });
    return fromWire<ApplicationWithKey>(body);
  }

  /**
   * Lists the tenant's Applications a page at a time, without their keys.
   *
   * @example
   * const { pagination, data } = await client.applications.list({ ids: [a, b], page: 1, size: 50 });
   */
  async list(input: ListApplicationsInput = {}): Promise<Page<Application>> {
    const query = new URLSearchParams();
    for (const id of input.ids ?? []) query.append("id", id);
    appendPage(query, input);
    const body = await this.#transport.send({ method: "GET", path: "/applications", query });
    return pageFromWire<Application>(body);
  }

  /**
   * Every Application {@link list} would return, page after page, fetched lazily as the loop advances.
   *
   * @example
   * for await (const app of client.applications.listAll({ size: 100 })) {
   *   if (app.expiresAt !== undefined) console.log(app.name, "expires", app.expiresAt);
   * }
   */
  listAll(input: ListAllApplicationsInput = {}): AsyncIterable<Application> {
    return itemsOfEveryPage((page) => this.list({ ...input, page }));
  }

  /**
   * Gets one Application. An id of another tenant answers 404, exactly like a missing one.
   *
   * @example
   * const app = await client.applications.get("5b2d1f0e-8c1a-4a57-9a43-0f6f3b1c2d4e");
   */
  async get(id: string): Promise<Application> {
    return fromWire<Application>(await this.#transport.send({ method: "GET", path: pathOf(id) }));
  }

  /**
   * Gets the Application this client's API key belongs to.
   *
   * @example
   * const self = await client.applications.getByKey();
   */
  async getByKey(): Promise<Application> {
    return fromWire<Application>(await this.#transport.send({ method: "GET", path: "/applications/key" }));
  }

  /**
   * Replaces an Application's name, permissions and rules; omitted permissions or rules become empty. The key
   * keeps working.
   *
   * @example
   * const app = await client.applications.update(id, { name: "backend v2", permissions: ["token:use"] });
   */
  async update(id: string, input: UpdateApplicationInput): Promise<Application> {
    const body = await this.#transport.send({ method: "PUT", path: pathOf(id), body: toWire(input) });
    return fromWire<Application>(body);
  }

  /**
   * Issues a new key for an Application. The previous key stops working at once.
   *
   * @example
   * const { key } = await client.applications.regenerateKey(id);
   */
  async regenerateKey(id: string): Promise<ApplicationWithKey> {
    const body = await this.#transport.send({ method: "POST", path: `${pathOf(id)}/regenerate` });
    return fromWire<ApplicationWithKey>(body);
  }

  /**
   * Deletes an Application; its key stops working at once.
   *
   * @example
   * await client.applications.delete(id);
   */
  async delete(id: string): Promise<void> {
    await this.#transport.send({ method: "DELETE", path: pathOf(id) });
  }
}

function pathOf(id: string): string {
  return `/applications/${encodeURIComponent(id)}`;
}
