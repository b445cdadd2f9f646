import type { Grantee } from "./decide.js";
import { holdsPermission, type ApplicationType, type Permission } from "./permissions.js";
import type { AccessRule } from "./rules.js";

/** An Application as access decisions see it: its tenant, type, permissions and access rules. */
export interface Application {
  readonly id: string;
  readonly tenantId: string;
  readonly name: string;
  readonly type: ApplicationType;
  readonly permissions: readonly Permission[];
  readonly rules: readonly AccessRule[];
  readonly createdBy: string | null;
  readonly createdAt: string;
  readonly modifiedBy: string | null;
  readonly modifiedAt: string | null;
  readonly expiresAt: string | null;
}

/** What an authorized session may do: the permissions and condition rules it was authorized with. */
export interface SessionGrant {
  readonly id: string;
  readonly permissions: readonly Permission[];
  readonly rules: readonly AccessRule[];
  readonly expiresAt: string;
}

/** Who is calling: the authenticated Application and, through it, its tenant. */
export interface Principal {
  readonly tenantId: string;
  /**
   * The calling Application. For a session key, the Application that authorized the session, as it is now: it
   * is what the session acts as (audit actor, `created_by`), and it bounds what the session may do.
   */
  readonly application: Application;
  /** Set when the caller authenticated with a session key. */
  readonly session?: SessionGrant;
  /** The request this principal acts in, for the audit log. */
  readonly requestId?: string;
}

/**
 * What access decisions are made over: the Application's grant, or a session's grant bounded by the Application
 * that authorized it (checked at every request, so narrowing or deleting that Application narrows or ends its
 * sessions at once).
 */
export function granteeOf(principal: Principal): Grantee {
  const { session, application } = principal;
  return session === undefined
    ? application
    : { permissions: session.permissions, rules: session.rules, ceiling: application };
}

/**
 * The route-level gate: whether the caller holds `permission` at all. A session needs it in its own grant and in
 * its authorizing Application's, as that is now.
 */
export function mayUse(principal: Principal, permission: Permission): boolean {
  const { session, application } = principal;
  return (
    holdsPermission(application, permission) &&
    (session === undefined || holdsPermission(session, permission))
  );
}
