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

/** What each permission lets a key do: `GET /permissions` (wire-format §5). */
export const PERMISSION_DESCRIPTIONS: Readonly<Record<Permission, string>> = {
  "token:create": "Create tokens (POST /tokens, /tokenize) in the rule's containers.",
  "token:read": "Read, list and detokenize tokens; data shown through the rule's transform.",
  "token:update": "Update tokens (PATCH /tokens/{id}).",
  "token:delete": "Delete tokens.",
  "token:search": "Search tokens with the query language; data shown through the rule's transform.",
  "token:use": "Use token data in reactors' detokenized arguments.",
  "application:create": "Create Applications and their keys.",
  "application:read": "List and read Applications; explain access decisions.",
  "application:update": "Update Applications and regenerate their keys.",
  "application:delete": "Delete Applications.",
  "reactor:create": "Create reactors.",
  "reactor:read": "Read reactors, their code and configuration.",
  "reactor:update": "Update reactors.",
  "reactor:delete": "Delete reactors.",
  "tenant:create": "Create tenants (the bootstrap key only).",
  "tenant:read": "Read the key's own tenant.",
  "webhook:read": "Read the webhook signing secret.",
  "webhook:update": "Rotate the webhook signing secret.",
  "log:read": "Read the audit log.",
};

/** The permission catalog, each with the Application types that may hold it; only those of `type` if given. */
export function permissionCatalog(
  type?: ApplicationType,
): { permission: Permission; description: string; applicationTypes: ApplicationType[] }[] {
  return PERMISSIONS.map((permission) => ({
    permission,
    description: PERMISSION_DESCRIPTIONS[permission],
    applicationTypes: APPLICATION_TYPES.filter((t) => ALLOWED[t].has(permission)),
  })).filter((entry) => type === undefined || entry.applicationTypes.includes(type));
}

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
