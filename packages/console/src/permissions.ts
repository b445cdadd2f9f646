import type { ApplicationType, Permission, TokenPermission, Transform } from "@tessera/sdk";

/**
 * What each permission lets a key do, as the rule editor and the explainer describe it; its keys are the
 * permissions, in the server's order (test/catalogs.test.ts holds them equal).
 */
export const PERMISSION_DESCRIPTIONS: Record<Permission, string> = {
  "token:create": "Create tokens (POST /tokens, /tokenize) in the rule's containers.",
  "token:read": "Read tokens by id, list them and detokenize; data shown through the rule's transform.",
  "token:update": "Change tokens (PATCH /tokens/{id}).",
  "token:delete": "Delete tokens.",
  "token:search": "Search tokens with the query language; results shown through the rule's transform.",
  "token:use": "Hand token data to reactors ({{ token }} in args); top-level, it reveals.",
  "application:create": "Create Applications and their keys.",
  "application:read": "List and read Applications; explain access decisions.",
  "application:update": "Change Applications and regenerate their keys.",
  "application:delete": "Delete Applications.",
  "reactor:create": "Create reactors.",
  "reactor:read": "Read reactors, their code and configuration.",
  "reactor:update": "Change reactors.",
  "reactor:delete": "Delete reactors.",
  "tenant:create": "Create tenants (the bootstrap key only).",
  "tenant:read": "Read the key's own tenant.",
  "webhook:read": "Read the webhook signing secret.",
  "webhook:update": "Rotate the webhook signing secret.",
  "log:read": "Read the audit log.",
};

const PERMISSIONS = Object.keys(PERMISSION_DESCRIPTIONS) as Permission[];

export function isTokenPermission(permission: Permission): permission is TokenPermission {
  return permission.startsWith("token:");
}

export const TOKEN_PERMISSIONS: readonly TokenPermission[] = PERMISSIONS.filter(isTokenPermission);

/** Which permissions each type may hold (DESIGN §6): the server refuses any other with a 400. */
export const PERMISSIONS_OF: Record<ApplicationType, readonly Permission[]> = {
  public: ["token:create", "token:update"],
  private: TOKEN_PERMISSIONS,
  management: PERMISSIONS.filter((p) => !isTokenPermission(p)),
};

export const TRANSFORM_DESCRIPTIONS: Record<Transform, string> = {
  reveal: "reveal: the data as stored",
  mask: "mask: the token's mask (absent when it has none)",
  redact: "redact: no data at all",
};
