import type { StoreVersions } from "../storage/database.js";
import type { ApplicationType, Permission } from "../access/permissions.js";
import type { AccessRule } from "../access/rules.js";

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
  /**
   * The store's versions read when the key was authenticated (SQLite only): the request's other lookups of rows
   * kept in memory (its reactor, its tokens) are checked against them instead of reading them again.
   */
  readonly versions?: StoreVersions;
}
