import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { setTraceIdHeaders } from "./trace-id.js";
import { storeOutage } from "../storage/availability.js";
import { AppError, codeForStatus, toProblem } from "./errors.js";
import { fieldErrors } from "./validation.js";

/** Renders every failure as problem+json, mapped in this one place (STYLE §6). */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler(sendError);

  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .type("application/problem+json")
      .send(
        toProblem(
          new AppError("not-found", `No route ${request.method} ${pathOf(request)}`),
          pathOf(request),
        ),
      ),
  );
}

/**
 * Also installed as Fastify's `frameworkErrors` hook: a malformed URL or an over-long path parameter fails
 * in the router, before the error handler is in place, and would otherwise answer in Fastify's own format.
 */
export function sendError(error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply {
  // Also read through an AppError's cause: the audit log and /readyz wrap an outage they met, for this log line.
  const outage = storeOutage(error);
  const appError =
    error instanceof AppError || outage === undefined
      ? toAppError(error, request)
      : AppError.storeUnavailable(outage);
  // Shedding load is the server working as meant, and under overload a line per refused request would add to it:
  // the metrics count those answers, and the pressure monitor logs when shedding starts and stops.
  if (appError.code === "overloaded") request.log.debug({ err: error }, "request shed");
  // An outage is not a bug: one line naming it, without a stack trace per request.
  else if (appError.code === "store-unavailable") {
    request.log.warn({ outage: outage?.description ?? appError.detail }, "store unavailable");
  } else if (appError.code === "master-key-unavailable") {
    // The custody layer logged why when the provider went down; a request it turns away is one short line.
    request.log.warn("master key unavailable");
  } else if (appError.status >= 500) request.log.error({ err: error }, "request failed");
  setTraceIdHeaders(request, reply);
  if (appError.retryAfterSeconds !== undefined)
    void reply.header("retry-after", String(appError.retryAfterSeconds));
  return reply
    .code(appError.status)
    .type("application/problem+json")
    .send(toProblem(appError, pathOf(request)));
}

function pathOf(request: FastifyRequest): string {
  return request.url.split("?", 1)[0] ?? request.url;
}

/**
 * The type/subtype a client sent, for the message, without its parameters: a header value is the client's text,
 * and a problem never quotes what a client sent beyond the names it needs to correct.
 */
function mediaTypeOf(header: string | undefined): string {
  if (header === undefined) return "(none)";
  const essence = /^\s*([A-Za-z0-9!#$&^_.+-]{1,64}\/[A-Za-z0-9!#$&^_.+-]{1,64})\s*(?:;|$)/.exec(header)?.[1];
  return essence ?? "(not a media type)";
}

function toAppError(error: FastifyError, request: FastifyRequest): AppError {
  if (error instanceof AppError) return error;
  if (error.validation !== undefined) {
    return AppError.validation(fieldErrors(error.validation, error.validationContext));
  }
  const status = error.statusCode;
  if (status !== undefined && status >= 400 && status < 500) {
    // Framework messages are rewritten: a JSON parser's message can quote the body, which may hold secrets.
    switch (error.code) {
      case "FST_ERR_CTP_INVALID_JSON_BODY":
      case "FST_ERR_CTP_EMPTY_JSON_BODY":
        return new AppError("malformed-request", "The body is not valid JSON.");
      case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
        return new AppError(
          "unsupported-media-type",
          `Content-Type ${mediaTypeOf(request.headers["content-type"])} is not supported; send application/json.`,
        );
      case "FST_ERR_CTP_BODY_TOO_LARGE":
        return new AppError("payload-too-large", "The body exceeds the configured size limit.");
      case "FST_ERR_BAD_URL":
        return new AppError("malformed-request", "The URL is not validly percent-encoded.");
      case "FST_ERR_MAX_PARAM_LENGTH":
        return new AppError("uri-too-long", "A path segment is too long.");
      default:
        return error instanceof SyntaxError
          ? new AppError("malformed-request", "The body is not valid JSON.")
          : new AppError(codeForStatus(status), error.code?.startsWith("FST_") ? error.message : undefined);
    }
  }
  return new AppError(
    "internal",
    `An unexpected error occurred. Quote request id ${request.id} to the operator; details are in the server log.`,
  );
}
