import { randomBytes } from "node:crypto";
import type { Principal } from "../access/principal.js";
import type { Authenticator } from "../server/auth.js";

const PREFIX = "tsi_";

/** Loads an Application as it is now (deleted, expired or changed since the credential was issued). */
export type LoadPrincipal = (tenantId: string, applicationId: string) => Promise<Principal | undefined>;

export interface InternalCredential {
  readonly key: string;
  revoke(): void;
}

/**
 * Short-lived keys the server issues to itself so that a reactor's `svc` calls go through the real API (same
 * validation, permissions and presentation as any client) as the reactor's Application, whose own key the server
 * never holds (only its hash). A credential lives for one invocation, exists only in this process's memory and
 * never enters the worker.
 */
export function createInternalCredentials(load: LoadPrincipal) {
  const issued = new Map<string, { tenantId: string; applicationId: string }>();
  return {
    issue(tenantId: string, applicationId: string): InternalCredential {
      const key = `${PREFIX}${randomBytes(32).toString("base64url")}`;
      issued.set(key, { tenantId, applicationId });
      return { key, revoke: () => issued.delete(key) };
    },

    /** `next`, with the credentials issued here accepted too. */
    authenticator(next: Authenticator): Authenticator {
      return {
        authenticate(key) {
          if (!key.startsWith(PREFIX)) return next.authenticate(key);
          const holder = issued.get(key);
          return holder === undefined
            ? Promise.resolve(undefined)
            : load(holder.tenantId, holder.applicationId).then(
                (principal) => principal && { principal, read: {} },
              );
        },
      };
    },
  };
}

export type InternalCredentials = ReturnType<typeof createInternalCredentials>;
