import { randomUUID } from "node:crypto";
import type { IncomingMessage } from "node:http";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { luhnValid } from "../shared/checksums.js";

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
/** Tessera's own API key prefixes (crypto/api-keys.ts). */
const API_KEY_PREFIX = /^key_(?:prv|pub|mgt)_/;

/**
 * The id goes on every log line, so one that looks like a secret sent in the wrong header is replaced too: an API
 * key, or a card number (a Luhn-valid run of 13 to 19 digits, or any longer run). Random hex ids rarely hold
 * such a run (W3C trace ids: about 0.2 %), and those that do simply get a fresh id.
 */
function looksSecret(id: string): boolean {
  if (API_KEY_PREFIX.test(id)) return true;
  return (id.match(/[0-9]{13,}/g) ?? []).some((run) => run.length > 19 || luhnValid(run));
}

/**
 * Fastify's `genReqId`: the caller's `SVC-TRACE-ID` (or `BT-TRACE-ID`) when it is safe, else a random UUID. The result is
 * `request.id`, which Fastify puts on every log line of the request (`reqId`) and the 500 problem quotes.
 */
export function traceIdOf(request: IncomingMessage): string {
  const given = request.headers[TRACE_ID_HEADER] ?? request.headers[BT_TRACE_ID_HEADER];
  return typeof given === "string" && ACCEPTED.test(given) && !looksSecret(given) ? given : randomUUID();
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
