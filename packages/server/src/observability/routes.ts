import { createHash, timingSafeEqual } from "node:crypto";
import type { FastifyInstance } from "fastify";
import { AppError } from "../server/errors.js";
import type { Metrics } from "./metrics.js";

export interface MetricsEndpoint {
  readonly metrics: Metrics;
  /** When set, GET /metrics requires `Authorization: Bearer <token>` (TESSERA_METRICS_TOKEN). */
  readonly token: string | undefined;
}

/**
 * Times every request (404s and problems included) and serves GET /metrics beside /healthz, outside the API-key
 * scope: a scraper holds no Application, and the token, when set, is the operator's, not a tenant's.
 */
export function registerMetrics(app: FastifyInstance, { metrics, token }: MetricsEndpoint): void {
  app.addHook("onResponse", (request, reply, done) => {
    metrics.observeRequest(
      request.method,
      request.routeOptions.url,
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });

  const expected = token === undefined ? undefined : digest(`Bearer ${token}`);
  // Not in the OpenAPI document: an operations endpoint, like the document itself, not part of the API.
  app.get("/metrics", { schema: { hide: true } }, async (request, reply) => {
    const given = request.headers.authorization;
    // Digests of equal length, so the comparison takes the same time whatever the caller sent.
    if (expected !== undefined && (given === undefined || !timingSafeEqual(digest(given), expected))) {
      void reply.header("www-authenticate", 'Bearer realm="metrics"');
      throw new AppError("unauthenticated", "GET /metrics requires the metrics bearer token.");
    }
    const text = await metrics.render();
    return reply.type(metrics.contentType).send(text);
  });
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}
