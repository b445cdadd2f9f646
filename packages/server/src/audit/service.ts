import type { Principal } from "../access/principal.js";
import { AppError } from "../server/errors.js";
import { parseTimestamp } from "../shared/text.js";
import { offsetOf, pageOf, type Page, type PageRequest } from "../shared/pages.js";
import type { Executor } from "../storage/database.js";
import { auditStore } from "./store.js";
import type { AuditRecord } from "./types.js";

export interface LogFilter {
  readonly entityType?: string;
  readonly entityId?: string;
  readonly actorId?: string;
  readonly action?: string;
  readonly startDate?: string;
  readonly endDate?: string;
}

export function createAuditService({ db }: { db: Executor }) {
  const store = auditStore(db);
  return {
    /** GET /logs: the caller's tenant's entries, newest first. */
    async list(principal: Principal, filter: LogFilter, page: PageRequest): Promise<Page<AuditRecord>> {
      const from = filter.startDate === undefined ? undefined : isoOf(filter.startDate, "start_date");
      const to = filter.endDate === undefined ? undefined : isoOf(filter.endDate, "end_date");
      if (from !== undefined && to !== undefined && from >= to) {
        throw AppError.validation({ end_date: ["must be after start_date"] });
      }
      const { items, total } = await store.list(principal.tenantId, {
        ...(filter.entityType !== undefined && { entityType: filter.entityType }),
        ...(filter.entityId !== undefined && { entityId: filter.entityId }),
        ...(filter.actorId !== undefined && { actorId: filter.actorId }),
        ...(filter.action !== undefined && { action: filter.action }),
        ...(from !== undefined && { from }),
        ...(to !== undefined && { to }),
        offset: offsetOf(page),
        limit: page.size,
      });
      return pageOf(items, total, page);
    },
  };
}

export type AuditService = ReturnType<typeof createAuditService>;

function isoOf(text: string, field: string): string {
  const parsed = parseTimestamp(text);
  if ("problem" in parsed) throw AppError.validation({ [field]: [parsed.problem] });
  return parsed.iso;
}
