// What is measured. Each scenario is one request, repeated under load against Tessera and compared with a bare
// Fastify server answering a body of the same size.

export interface ScenarioContext {
  /** Tessera's base URL, e.g. http://127.0.0.1:41234 */
  readonly baseUrl: string;
  /** The bootstrap Application's management key, which may do anything. */
  readonly managementKey: string;
}

export interface LoadRequest {
  readonly method: "GET" | "POST" | "PUT" | "DELETE";
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: string;
  /** The status every answer must have; the sanity check and the load run both hold Tessera to it. */
  readonly expectedStatus: number;
}

export interface Scenario {
  readonly name: string;
  /** The pass mark: Tessera's req/s divided by the ceiling's must be at least this. */
  readonly minRatio: number;
  /** Creates whatever the request needs (tokens, Applications…) and returns the request to repeat. */
  prepare(context: ScenarioContext): Promise<LoadRequest>;
}

export const scenarios: readonly Scenario[] = [
  {
    // Authentication (key hash lookup, permission check) plus one read and the response serialization.
    name: "GET /applications/key",
    minRatio: 0.35,
    prepare: (context) =>
      Promise.resolve({
        method: "GET",
        path: "/applications/key",
        headers: { "SVC-API-KEY": context.managementKey },
        expectedStatus: 200,
      }),
  },
];
