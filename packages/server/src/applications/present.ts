import type { Static } from "typebox";
import type { ApplicationSchema } from "./schemas.js";
import type { Application } from "../access/principal.js";

export type ApplicationWire = Static<typeof ApplicationSchema>;

/** camelCase inside, snake_case on the wire: converted here and nowhere else. Absent values are omitted. */
export function presentApplication(app: Application): ApplicationWire {
  return {
    id: app.id,
    tenant_id: app.tenantId,
    name: app.name,
    type: app.type,
    permissions: [...app.permissions],
    rules: app.rules.map((rule) => ({
      ...rule,
      permissions: [...rule.permissions],
    })) as ApplicationWire["rules"],
    ...(app.createdBy !== null && { created_by: app.createdBy }),
    created_at: app.createdAt,
    ...(app.modifiedBy !== null && { modified_by: app.modifiedBy }),
    ...(app.modifiedAt !== null && { modified_at: app.modifiedAt }),
    ...(app.expiresAt !== null && { expires_at: app.expiresAt }),
  };
}
