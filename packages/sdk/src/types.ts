/**
 * The SDK's view of Tessera's resources, in camelCase. Written by hand against the server's response schemas
 * for now; STYLE §5 has them generated from `openapi.json` once it is committed.
 *
 * Timestamps are ISO-8601 strings, as the server sends them. Optional properties are absent, never `null`.
 */

export type ApplicationType = "private" | "public" | "management";

export type TokenPermission =
  "token:create" | "token:read" | "token:update" | "token:delete" | "token:search" | "token:use";

export type ManagementPermission =
  | "application:create"
  | "application:read"
  | "application:update"
  | "application:delete"
  | "reactor:create"
  | "reactor:read"
  | "reactor:update"
  | "reactor:delete"
  | "tenant:create"
  | "tenant:read"
  | "log:read";

/** Which ones an Application may hold depends on its type; the server answers 400 for any other combination. */
export type Permission = TokenPermission | ManagementPermission;

/** How token data reaches a caller under a rule. */
export type Transform = "redact" | "mask" | "reveal";

export interface Condition {
  attribute: "id" | "container";
  operator: "starts_with" | "equals";
  value: string;
}

/** Grants token permissions on the tokens in `container`; lower `priority` values take precedence. */
export interface AccessRule {
  description?: string;
  priority: number;
  /** A path such as `/pci/high/`; stored lower-case. Required for public and private Applications. */
  container?: string;
  /** Applies only to sessions; the server refuses it on Applications today. */
  conditions?: Condition[];
  transform: Transform;
  permissions: TokenPermission[];
}

export interface Application {
  id: string;
  tenantId: string;
  name: string;
  type: ApplicationType;
  permissions: Permission[];
  rules: AccessRule[];
  createdBy?: string;
  createdAt: string;
  modifiedBy?: string;
  modifiedAt?: string;
  expiresAt?: string;
}

/** An Application together with its API key, which the server shows only in this one response. */
export interface ApplicationWithKey extends Application {
  key: string;
}

export interface CreateApplicationInput {
  /** 1–200 characters, not blank. */
  name: string;
  type: ApplicationType;
  /** `permissions` or `rules` must be non-empty. */
  permissions?: Permission[];
  rules?: AccessRule[];
  /** When the Application (and its key) expires; must be in the future. */
  expiresAt?: string | Date;
}

/** A full replacement: omitted `permissions` or `rules` become empty. The type cannot be changed. */
export interface UpdateApplicationInput {
  name: string;
  permissions?: Permission[];
  rules?: AccessRule[];
}

export interface ListApplicationsInput {
  /** Only these Applications (at most 100); sent as repeated `id` query parameters. */
  ids?: string[];
  /** From 1; default 1. A page past the end is empty, not an error. */
  page?: number;
  /** 1–100; default 20. */
  size?: number;
}

export interface Pagination {
  totalItems: number;
  pageNumber: number;
  pageSize: number;
  totalPages: number;
}

export interface Page<T> {
  pagination: Pagination;
  data: T[];
}

export interface Tenant {
  id: string;
  name: string;
  createdBy?: string;
  createdAt: string;
}

/** A new tenant with its first management Application, whose key is shown only in this response. */
export interface CreatedTenant extends Tenant {
  application: ApplicationWithKey;
}

export interface CreateTenantInput {
  /** 1–200 characters, not blank. */
  name: string;
}
