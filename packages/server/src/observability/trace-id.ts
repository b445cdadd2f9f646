import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";

/** The correlation id a caller may send (Basis Theory's BT-TRACE-ID under our prefix), echoed on the answer. */
export const TRACE_ID_HEADER = "svc-trace-id";
/** What Basis Theory's SDKs send (wire-format §1): taken when ours is absent. */
const BT_TRACE_ID_HEADER = "bt-trace-id";
/** The same id under the generic name support tools and proxies look for. */
export const REQUEST_ID_HEADER = "request-id";

/**
 * What a caller's id may be: UUIDs, W3C trace ids, ULIDs, hex and base64 all fit. Anything else (spaces, quotes,
 * control characters, a repeated header joined with ", ") could forge or break log lines, so it is replaced.
 */
const ACCEPTED = /^[A-Za-z0-9._~:+/=-]{1,128}$/;

/**
 * Fastify's `genReqId`: the caller's `SVC-TRACE-ID` (or `BT-TRACE-ID`) when it is safe, else a random UUID. The result is
 * `request.id`, which Fastify puts on every log line of the request (`reqId`) and the 500 problem quotes.
 */
export function traceIdOf(request: IncomingMessage): string {
  const given = request.headers[TRACE_ID_HEADER] ?? request.headers[BT_TRACE_ID_HEADER];
  return typeof given === "string" && ACCEPTED.test(given) ? given : randomUUID();
}

/**
 * Echoes the id on every answer: successes, problems, 404s and 401s alike. `onSend` runs after the handler and
 * the error handler, so no route (a reactor's own headers included) can replace it.
 */
export function echoTraceId(app: FastifyInstance): void {
  app.addHook("onSend", (request, reply, payload, done) => {
    setTraceIdHeaders(request, reply);
    done(null, payload);
  });
}

/** Also called for errors the router raises (a malformed URL), whose answers skip the `onSend` hooks. */
export function setTraceIdHeaders(request: FastifyRequest, reply: FastifyReply): void {
  void reply.header(TRACE_ID_HEADER, request.id).header(REQUEST_ID_HEADER, request.id);
}
