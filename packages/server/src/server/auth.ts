import type { FastifyInstance, FastifyRequest } from "fastify";
import { holdsPermission, type Permission } from "../access/permissions.js";
import type { Principal } from "../applications/types.js";
import { AppError } from "./errors.js";

declare module "fastify" {
  interface FastifyContextConfig {
    /** The permission the route requires (STYLE §7); every API route must declare one. */
    permission?: Permission;
  }
  interface FastifyRequest {
    principal: Principal | null;
  }
}

export interface Authenticator {
  authenticate(key: string): Promise<Principal | undefined>;
}

export const API_KEY_HEADER = "svc-api-key";

/**
 * Installs authentication and authorization on the API scope it is called in. It runs at `onRequest`, before
 * the body is read or validated, so an unauthenticated caller learns nothing about the request it sent.
 */
export function registerAuth(api: FastifyInstance, authenticator: Authenticator): void {
  api.decorateRequest("principal", null);

  api.addHook("onRoute", (route) => {
    if (route.config?.permission === undefined) {
      throw new Error(`route ${String(route.method)} ${route.url} does not declare a permission`);
    }
  });

  api.addHook("onRequest", async (request) => {
    const permission = request.routeOptions.config.permission;
    if (permission === undefined) throw new AppError("internal", "route without a permission");
    const key = request.headers[API_KEY_HEADER];
    if (typeof key !== "string" || key.length === 0) {
      throw new AppError("unauthenticated", "Send an API key in the SVC-API-KEY header.");
    }
    const principal = await authenticator.authenticate(key);
    if (principal === undefined) {
      throw new AppError(
        "unauthenticated",
        "The API key is not valid (unknown, regenerated, deleted or expired).",
      );
    }
    if (!holdsPermission(principal.application, permission)) {
      throw AppError.forbidden(`The Application lacks the permission ${permission}.`);
    }
    request.principal = { ...principal, requestId: request.id };
  });
}

export function principalOf(request: FastifyRequest): Principal {
  if (request.principal === null) throw new AppError("internal", "no principal on an authenticated route");
  return request.principal;
}
