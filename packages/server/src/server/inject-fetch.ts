import type { Fetch } from "@tessera/sdk";
import type { FastifyInstance } from "fastify";

/**
 * A `fetch` that hands each request to this server's own router (Fastify's inject): a reactor's `svc` calls go
 * through the real API without a network route, so a worker never needs one to Tessera. The app is looked up
 * per call because the reactor engine is made before the app whose routes it serves.
 */
export function injectFetch(appOf: () => FastifyInstance): Fetch {
  return async (input, init) => {
    const app = appOf();
    const url = new URL(input instanceof Request ? input.url : String(input));
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const response = await app.inject({
      method: (init?.method ?? "GET") as "GET",
      url: `${url.pathname}${url.search}`,
      headers,
      ...(typeof init?.body === "string" && { payload: init.body }),
    });
    const bodyless = response.statusCode === 204 || response.statusCode === 304;
    return new Response(bodyless ? null : response.rawPayload, {
      status: response.statusCode,
      headers: Object.entries(response.headers).flatMap(([name, value]) =>
        value === undefined
          ? []
          : (Array.isArray(value) ? value : [String(value)]).map((v) => [name, v] as [string, string]),
      ),
    });
  };
}
