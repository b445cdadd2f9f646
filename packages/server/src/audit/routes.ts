import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { principalOf } from "../server/auth.js";
import { pageRequest, presentPage } from "../server/pagination.js";
import { responses } from "../server/problem-schema.js";
import { ListLogsQuery, LogPage } from "./schemas.js";
import type { AuditService } from "./service.js";
import type { AuditRecord } from "./types.js";

/** camelCase inside, snake_case on the wire: converted here and nowhere else. */
function presentEntry(record: AuditRecord) {
  return {
    id: record.id,
    tenant_id: record.tenantId,
    ...(record.actorId !== null && { actor_id: record.actorId }),
    action: record.action,
    entity_type: record.entityType,
    ...(record.entityId !== null && { entity_id: record.entityId }),
    ...(record.rule !== null && { rule: JSON.parse(record.rule) as unknown }),
    ...(record.details !== null && { details: JSON.parse(record.details) as unknown }),
    ...(record.requestId !== null && { request_id: record.requestId }),
    ...(record.seq !== null && { sequence: record.seq }),
    created_at: record.occurredAt,
  };
}

export function auditRoutes(service: AuditService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get(
      "/logs",
      {
        config: { permission: "log:read" },
        schema: {
          tags: ["Audit log"],
          summary: "List the tenant's audit log, newest first",
          querystring: ListLogsQuery,
          response: responses({ 200: LogPage }),
        },
      },
      async (request) => {
        const query = request.query;
        const page = await service.list(
          principalOf(request),
          {
            ...(query.entity_type !== undefined && { entityType: query.entity_type }),
            ...(query.entity_id !== undefined && { entityId: query.entity_id }),
            ...(query.actor_id !== undefined && { actorId: query.actor_id }),
            ...(query.action !== undefined && { action: query.action }),
            ...(query.start_date !== undefined && { startDate: query.start_date }),
            ...(query.end_date !== undefined && { endDate: query.end_date }),
          },
          pageRequest(query),
        );
        return presentPage(page, presentEntry) as never;
      },
    );
  };
}
