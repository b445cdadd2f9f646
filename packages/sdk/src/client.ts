import { Applications } from "./applications.js";
import { Transport, type Fetch } from "./http.js";
import { Tenants } from "./tenants.js";

export interface TesseraClientOptions {
  /** Where the server listens, e.g. `https://vault.internal:8080`; a path prefix is kept. */
  baseUrl: string;
  /** Sent in the `SVC-API-KEY` header. */
  apiKey: string;
  /** Abort a request, response body included, after this long; default 30 000. */
  timeoutMs?: number;
  /** Default `tessera-sdk/<version>`. */
  userAgent?: string;
  /** Default `globalThis.fetch`; pass one for runtimes without it or to instrument requests. */
  fetch?: Fetch;
}

/**
 * A typed client for the Tessera API. Requests and results use camelCase; the wire's snake_case is converted
 * in one place.
 *
 * A response outside 2xx throws {@link TesseraError}; no response at all (unreachable server, timeout) throws
 * {@link TesseraConnectionError}. Each call is sent once: this version never retries. (Retries are planned
 * only for 429, 502, 503 and 504 on idempotent calls; a 4xx other than 429 is never worth repeating.)
 *
 * @example
 * const client = new TesseraClient({ baseUrl: "http://localhost:8080", apiKey: process.env.TESSERA_API_KEY! });
 * const { data } = await client.applications.list({ size: 100 });
 */
export class TesseraClient {
  /** Applications and their API keys. */
  readonly applications: Applications;
  /** The caller's tenant, and new tenants. */
  readonly tenants: Tenants;

  constructor(options: TesseraClientOptions) {
    const transport = new Transport(options);
    this.applications = new Applications(transport);
    this.tenants = new Tenants(transport);
  }
}
