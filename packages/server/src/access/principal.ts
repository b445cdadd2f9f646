import type { ApplicationType, Permission } from "./permissions.js";
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

/** Who is calling: the authenticated Application and, through it, its tenant. */
export interface Principal {
  readonly tenantId: string;
  readonly application: Application;
  /** The request this principal acts in, for the audit log. */
  readonly requestId?: string;
}
