import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { principalOf } from "../server/auth.js";
import { AppError } from "../server/errors.js";
import { MAX_KEY_LENGTH, requestHash, type Claim, type Idempotency } from "./service.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The route honours SVC-IDEMPOTENCY-KEY: a repeat of a request gets its first answer (docs/idempotency.md). */
    idempotent?: boolean;
  }
  interface FastifyRequest {
    idempotencyClaim?: Extract<Claim, { kind: "claimed" }>;
  }
}

/** Basis Theory's SDKs send BT-IDEMPOTENCY-KEY (wire-format §1); ours is taken first when both are there. */
const HEADERS = ["svc-idempotency-key", "bt-idempotency-key"] as const;
const REPLAYED = "idempotent-replayed";

function keyOf(request: FastifyRequest): { header: string; key: string } | undefined {
  for (const header of HEADERS) {
    const value = request.headers[header];
    if (typeof value === "string") return { header, key: value };
  }
  return undefined;
}

/**
 * After authentication and validation (so that neither an unknown caller nor a malformed request uses up a key),
 * a request carrying a key claims it or gets the answer kept for it; once answered, the answer is kept. A 5xx
 * is not kept: the key is freed so that the request can be sent again.
 */
export function registerIdempotency(api: FastifyInstance, idempotency: Idempotency): void {
  const claimOrReplay = async (request: FastifyRequest, reply: FastifyReply) => {
    const given = keyOf(request);
    if (given === undefined) return;
    if (given.key.length === 0 || given.key.length > MAX_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(given.key)) {
      throw AppError.validation({
        [given.header.toUpperCase()]: [`must be 1–${MAX_KEY_LENGTH} visible ASCII characters`],
      });
    }
    const hash = requestHash(request.method, request.routeOptions.url ?? "", request.params, request.body);
    const claim = await idempotency.claim(principalOf(request), given.key, hash);
    if (claim.kind === "claimed") {
      request.idempotencyClaim = claim;
      return;
    }
    const { status, contentType, body } = claim.answer;
    void reply.header(REPLAYED, "true").code(status);
    if (contentType !== undefined) void reply.type(contentType);
    // The kept bytes, exactly as first sent: not serialised again through the route's schema.
    return reply.serializer((payload: unknown) => payload as string).send(body);
  };

  const keep = async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const claim = request.idempotencyClaim;
    if (claim === undefined) return payload;
    request.idempotencyClaim = undefined;
    if (reply.statusCode >= 500) {
      await idempotency.release(claim);
      return payload;
    }
    const contentType = reply.getHeader("content-type");
    await idempotency.complete(claim, {
      status: reply.statusCode,
      contentType: typeof contentType === "string" ? contentType : undefined,
      body: typeof payload === "string" ? payload : Buffer.isBuffer(payload) ? payload.toString("utf8") : "",
    });
    return payload;
  };

  // Hooks of the idempotent routes alone: on every other route (the token read among them) two hooks that only
  // find `idempotent` unset would cost two promises per request.
  api.addHook("onRoute", (route) => {
    if (route.config?.idempotent !== true) return;
    route.preHandler = [...hooksOf(route.preHandler), claimOrReplay];
    route.onSend = [...hooksOf(route.onSend), keep];
  });
}

function hooksOf<Hook>(hooks: Hook | Hook[] | undefined): Hook[] {
  return hooks === undefined ? [] : Array.isArray(hooks) ? hooks : [hooks];
}
