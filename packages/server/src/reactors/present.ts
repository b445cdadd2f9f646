import type { Static } from "typebox";
import type { ReactorSchema } from "./schemas.js";
import type { Reactor } from "./types.js";

export type ReactorWire = Static<typeof ReactorSchema>;

/** camelCase inside, snake_case on the wire: converted here and nowhere else. Absent values are omitted. */
export function presentReactor(reactor: Reactor): ReactorWire {
  return {
    id: reactor.id,
    tenant_id: reactor.tenantId,
    name: reactor.name,
    code: reactor.code,
    configuration: { ...reactor.configuration },
    ...(reactor.applicationId !== null && { application_id: reactor.applicationId }),
    ...(reactor.createdBy !== null && { created_by: reactor.createdBy }),
    created_at: reactor.createdAt,
    ...(reactor.modifiedBy !== null && { modified_by: reactor.modifiedBy }),
    ...(reactor.modifiedAt !== null && { modified_at: reactor.modifiedAt }),
  };
}
