import type { Static } from "typebox";
import type { TokenSchema } from "./schemas.js";
import type { TokenView } from "./views.js";

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
  // Members are added one by one, in the order clients see them: a search page presents up to 100 tokens, and
  // conditional spreads cost several objects each.
  const wire: { -readonly [K in keyof TokenWire]?: TokenWire[K] } = {
    id: record.id,
    type: record.type,
    tenant_id: record.tenantId,
  };
  if (view.shown !== undefined) wire.data = view.shown.value;
  if (record.mask !== null) wire.mask = record.mask;
  wire.metadata = { ...record.metadata };
  if (record.fingerprint !== null) wire.fingerprint = record.fingerprint;
  if (record.fingerprintExpression !== null) wire.fingerprint_expression = record.fingerprintExpression;
  wire.search_indexes = [...record.searchIndexes];
  wire.containers = [...record.containers];
  if (record.expiresAt !== null) wire.expires_at = record.expiresAt;
  if (record.createdBy !== null) wire.created_by = record.createdBy;
  wire.created_at = record.createdAt;
  if (record.modifiedBy !== null) wire.modified_by = record.modifiedBy;
  if (record.modifiedAt !== null) wire.modified_at = record.modifiedAt;
  if (view.deduplicated === true) wire._extras = { deduplicated: true };
  // Every member the schema requires was set above.
  return wire as TokenWire;
}
