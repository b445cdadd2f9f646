import type { Static } from "typebox";
import type { TokenSchema } from "./schemas.js";
import type { TokenView } from "./service.js";

export type TokenWire = Static<typeof TokenSchema>;

/** snake_case on the wire, converted here only. A redacted token has no `data` member at all. */
export function presentToken(view: TokenView): TokenWire {
  const { record } = view;
  if (view.identityOnly === true) {
    return {
      id: record.id,
      type: record.type,
      tenant_id: record.tenantId,
      ...(record.fingerprint !== null && { fingerprint: record.fingerprint }),
      containers: [...record.containers],
      _extras: { deduplicated: true },
    };
  }
  return {
    id: record.id,
    type: record.type,
    tenant_id: record.tenantId,
    ...(view.shown !== undefined && { data: view.shown.value }),
    ...(record.mask !== null && { mask: record.mask }),
    metadata: { ...record.metadata },
    ...(record.fingerprint !== null && { fingerprint: record.fingerprint }),
    ...(record.fingerprintExpression !== null && { fingerprint_expression: record.fingerprintExpression }),
    search_indexes: [...record.searchIndexes],
    containers: [...record.containers],
    ...(record.expiresAt !== null && { expires_at: record.expiresAt }),
    ...(record.createdBy !== null && { created_by: record.createdBy }),
    created_at: record.createdAt,
    ...(record.modifiedBy !== null && { modified_by: record.modifiedBy }),
    ...(record.modifiedAt !== null && { modified_at: record.modifiedAt }),
    ...(view.deduplicated === true && { _extras: { deduplicated: true } }),
  };
}
