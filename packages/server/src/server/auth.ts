import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ApplicationType, Permission } from "../access/permissions.js";
import { mayUse, type Principal } from "../access/principal.js";
import type { ReadContext } from "../storage/database.js";
import { AppError } from "./errors.js";

/** For the one route any valid key may call: `GET /permissions`, the catalog, the same for every caller. */
export const ANY_APPLICATION = "any-application";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The permission the route requires (STYLE §7); every API route must declare one, or `keyType`. */
    permission?: Permission | typeof ANY_APPLICATION;
    /**
     * Instead of a permission: the route takes the key of an Application of this type, whatever it holds, and
     * no session key (POST /sessions for public keys, POST /sessions/authorize for private ones).
     */
    keyType?: ApplicationType;
  }
  interface FastifyRequest {
    principal: Principal | null;
    readContext: ReadContext | null;
  }
}

/** A caller whose key was accepted, and what the store said when it was (ReadContext). */
export interface Authenticated {
  readonly principal: Principal;
  readonly read: ReadContext;
}

export interface Authenticator {
  authenticate(key: string): Promise<Authenticated | undefined>;
}

export const API_KEY_HEADER = "svc-api-key";
/** Basis Theory's name for the same header, which its SDKs send (wire-format §1): accepted exactly alike. */
export const BT_API_KEY_HEADER = "bt-api-key";

/**
 * The key a request carries in either header. Both with different values is refused rather than one picked: a
 * proxy adding its own key beside the caller's must not decide which Application the request acts as.
 */
function apiKeyOf(request: FastifyRequest): string {
  const keys = [request.headers[API_KEY_HEADER], request.headers[BT_API_KEY_HEADER]].filter(
    (key): key is string => typeof key === "string" && key.length > 0,
  );
  if (keys.length === 0) {
    throw new AppError("unauthenticated", "Send an API key in the SVC-API-KEY (or BT-API-KEY) header.");
  }
  if (keys.length === 2 && keys[0] !== keys[1]) {
    throw new AppError(
      "unauthenticated",
      "SVC-API-KEY and BT-API-KEY carry different keys; send one of them, or the same key in both.",
    );
  }
  return keys[0]!;
}

/**
 * Installs authentication and authorization on the API scope it is called in. It runs at `onRequest`, before
 * the body is read or validated, so an unauthenticated caller learns nothing about the request it sent.
 */
export function registerAuth(api: FastifyInstance, authenticator: Authenticator): void {
  api.decorateRequest("principal", null);
  api.decorateRequest("readContext", null);

  api.addHook("onRoute", (route) => {
    if (route.config?.permission === undefined && route.config?.keyType === undefined) {
      throw new Error(`route ${String(route.method)} ${route.url} does not declare a permission`);
    }
  });

  api.addHook("onRequest", async (request) => {
    const { permission, keyType } = request.routeOptions.config;
    if (permission === undefined && keyType === undefined) {
      throw new AppError("internal", "route without a permission");
    }
    const authenticated = await authenticator.authenticate(apiKeyOf(request));
    if (authenticated === undefined) {
      throw new AppError(
        "unauthenticated",
        "The API key is not valid (unknown, regenerated, deleted or expired).",
      );
    }
    const { principal, read } = authenticated;
    if (permission !== undefined && permission !== ANY_APPLICATION && !mayUse(principal, permission)) {
      throw AppError.forbidden(
        `The ${principal.session ? "session" : "Application"} lacks the permission ${permission}.`,
      );
    }
    if (
      keyType !== undefined &&
      (principal.session !== undefined || principal.application.type !== keyType)
    ) {
      throw AppError.forbidden(`This route takes the key of a ${keyType} Application.`);
    }
    request.principal = { ...principal, requestId: request.id };
    request.readContext = read;
  });
}

export function principalOf(request: FastifyRequest): Principal {
  if (request.principal === null) throw new AppError("internal", "no principal on an authenticated route");
  return request.principal;
}

/** The request's read context (ReadContext), for the service calls that read rows kept in memory. */
export function readContextOf(request: FastifyRequest): ReadContext {
  return request.readContext ?? {};
}
