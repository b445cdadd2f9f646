import { Type } from "typebox";
import { PageOf, PageParams } from "../server/pagination.js";
import { StringEnum, Timestamp, Uuid } from "../server/schemas.js";
import { AUDIT_ACTIONS, AUDIT_ENTITY_TYPES } from "./types.js";

export const AuditEntrySchema = Type.Object({
  id: Uuid,
  tenant_id: Uuid,
  actor_id: Type.Optional(Type.String({ description: "The acting Application; absent for Tessera itself." })),
  action: StringEnum(AUDIT_ACTIONS),
  entity_type: StringEnum(AUDIT_ENTITY_TYPES),
  entity_id: Type.Optional(Type.String()),
  rule: Type.Optional(
    Type.Object(
      { container: Type.String(), priority: Type.Integer(), transform: Type.String() },
      { description: "The access rule that decided how the token was shown or used." },
    ),
  ),
  details: Type.Optional(
    Type.Record(Type.String(), Type.Unknown(), {
      description: "Ids, counts, a search's query with its values removed; never token data or keys.",
    }),
  ),
  request_id: Type.Optional(Type.String()),
  sequence: Type.Optional(
    Type.Integer({
      description: "Its place in the tenant's tamper-evident chain; absent until sealed (about a second).",
    }),
  ),
  created_at: Timestamp,
});

export const ListLogsQuery = Type.Object({
  entity_type: Type.Optional(StringEnum(AUDIT_ENTITY_TYPES)),
  entity_id: Type.Optional(Type.String({ minLength: 1, maxLength: 400 })),
  actor_id: Type.Optional(Type.String({ minLength: 1, maxLength: 400 })),
  action: Type.Optional(StringEnum(AUDIT_ACTIONS)),
  start_date: Type.Optional(
    Type.String({ format: "date-time", description: "From this time on (inclusive)." }),
  ),
  end_date: Type.Optional(Type.String({ format: "date-time", description: "Before this time (exclusive)." })),
  ...PageParams,
});

export const LogPage = PageOf(AuditEntrySchema);
