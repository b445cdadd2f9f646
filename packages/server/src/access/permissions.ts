export const APPLICATION_TYPES = ["private", "public", "management"] as const;
export type ApplicationType = (typeof APPLICATION_TYPES)[number];

export const TOKEN_PERMISSIONS = [
  "token:create",
  "token:read",
  "token:update",
  "token:delete",
  "token:search",
  "token:use",
] as const;

export const MANAGEMENT_PERMISSIONS = [
  "application:create",
  "application:read",
  "application:update",
  "application:delete",
  "reactor:create",
  "reactor:read",
  "reactor:update",
  "reactor:delete",
  "tenant:create",
  "tenant:read",
  "webhook:read",
  "webhook:update",
  "log:read",
] as const;

export const PERMISSIONS = [...TOKEN_PERMISSIONS, ...MANAGEMENT_PERMISSIONS] as const;
export type Permission = (typeof PERMISSIONS)[number];
export type TokenPermission = (typeof TOKEN_PERMISSIONS)[number];

// DESIGN §6 (after Basis Theory): public keys live in browsers and apps, so they may only write tokens;
// management keys administer the tenant and never see token data.
const ALLOWED: Record<ApplicationType, ReadonlySet<Permission>> = {
  public: new Set<Permission>(["token:create", "token:update"]),
  private: new Set<Permission>(TOKEN_PERMISSIONS),
  management: new Set<Permission>(MANAGEMENT_PERMISSIONS),
};

export function isAllowedFor(type: ApplicationType, permission: Permission): boolean {
  return ALLOWED[type].has(permission);
}

export function isTokenPermission(permission: Permission): permission is TokenPermission {
  return (TOKEN_PERMISSIONS as readonly string[]).includes(permission);
}

/** Permissions handed to the bootstrap Application and to each new tenant's first management Application. */
export function managementPermissions(options: { includeTenantCreate: boolean }): Permission[] {
  return MANAGEMENT_PERMISSIONS.filter((p) => options.includeTenantCreate || p !== "tenant:create");
}

export interface Grant {
  readonly permissions: readonly Permission[];
  readonly rules: readonly { readonly permissions: readonly Permission[] }[];
}

/**
 * The route-level gate: whether the Application holds `permission` at all, directly or through any rule.
 * Which tokens a rule's permission reaches is decided per container by the token services.
 */
export function holdsPermission(grant: Grant, permission: Permission): boolean {
  return (
    grant.permissions.includes(permission) || grant.rules.some((r) => r.permissions.includes(permission))
  );
}
