import type { Principal } from "../access/principal.js";
import type { AuditAction, AuditEntityType, AuditEntry, AuditRule } from "./types.js";

/**
 * An entry for what `principal` did, with the request it came in on. What a session key does is recorded as its
 * authorizing Application's doing, with the session's id in `details.session_id`: the log of a session's use.
 */
export function auditEntry(
  principal: Principal,
  action: AuditAction,
  entity: { type: AuditEntityType; id: string | null },
  extra: { rule?: AuditRule | undefined; details?: Record<string, unknown> } = {},
): AuditEntry {
  return {
    tenantId: principal.tenantId,
    actorId: principal.application.id,
    action,
    entityType: entity.type,
    entityId: entity.id,
    ...(extra.rule !== undefined && { rule: extra.rule }),
    ...(principal.session !== undefined
      ? { details: { ...extra.details, session_id: principal.session.id } }
      : extra.details !== undefined && { details: extra.details }),
    ...(principal.requestId !== undefined && { requestId: principal.requestId }),
  };
}
