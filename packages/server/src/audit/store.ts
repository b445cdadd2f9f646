import { CompiledQuery, type Selectable } from "kysely";
import type { Executor } from "../storage/database.js";
import type { AuditLogTable } from "../storage/schema.js";
import type { AuditRecord } from "./types.js";
import { pageAndCount } from "../storage/page-query.js";

type Row = Selectable<AuditLogTable>;

function fromRow(row: Row): AuditRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    occurredAt: row.occurred_at,
    actorId: row.actor_id,
    action: row.action,
    entityType: row.entity_type,
    entityId: row.entity_id,
    rule: row.rule,
    details: row.details,
    requestId: row.request_id,
    seq: row.seq === null ? null : Number(row.seq),
    hash: row.hash,
  };
}

export interface AuditFilter {
  readonly entityType?: string;
  readonly entityId?: string;
  readonly actorId?: string;
  readonly action?: string;
  /** Inclusive. */
  readonly from?: string;
  /** Exclusive. */
  readonly to?: string;
  readonly offset: number;
  readonly limit: number;
}

/**
 * The insert of one entry, compiled once from `db`: the answer binds an entry's values in column order (id,
 * tenant, time, actor, action, entity type and id, rule, details, request id) for whichever executor runs it.
 */
export function auditInsert(db: Executor): (values: readonly unknown[]) => CompiledQuery {
  const statement = db
    .insertInto("audit_log")
    .values({
      id: "",
      tenant_id: "",
      occurred_at: "",
      actor_id: null,
      action: "",
      entity_type: "",
      entity_id: null,
      rule: null,
      details: null,
      request_id: null,
    })
    .compile();
  return (values) => CompiledQuery.raw(statement.sql, [...values]);
}

/** The audit log's queries, every one scoped by tenant but the sealer's search for tenants with work. */
export function auditStore(db: Executor) {
  return {
    /** Newest first. */
    async list(tenantId: string, filter: AuditFilter): Promise<{ items: AuditRecord[]; total: number }> {
      let query = db.selectFrom("audit_log").where("tenant_id", "=", tenantId);
      if (filter.entityType !== undefined) query = query.where("entity_type", "=", filter.entityType);
      if (filter.entityId !== undefined) query = query.where("entity_id", "=", filter.entityId);
      if (filter.actorId !== undefined) query = query.where("actor_id", "=", filter.actorId);
      if (filter.action !== undefined) query = query.where("action", "=", filter.action);
      if (filter.from !== undefined) query = query.where("occurred_at", ">=", filter.from);
      if (filter.to !== undefined) query = query.where("occurred_at", "<", filter.to);
      const { rows, total } = await pageAndCount(
        query,
        (q) => q.selectAll().orderBy("occurred_at", "desc").orderBy("id", "desc"),
        filter,
      );
      return { items: rows.map(fromRow), total };
    },

    async tenantsWithUnsealed(): Promise<string[]> {
      const rows = await db
        .selectFrom("audit_log")
        .select("tenant_id")
        .distinct()
        .where("seq", "is", null)
        // A shredded tenant has no audit key left to chain with: what it recorded after is kept unsealed.
        .where("tenant_id", "not in", (eb) =>
          eb.selectFrom("tenants").select("id").where("shredded_at", "is not", null),
        )
        .execute();
      return rows.map((row) => row.tenant_id);
    },

    /** The last sealed row of the tenant's chain. */
    async head(tenantId: string): Promise<{ seq: number; hash: string } | undefined> {
      const row = await db
        .selectFrom("audit_log")
        .select(["seq", "hash"])
        .where("tenant_id", "=", tenantId)
        .where("seq", "is not", null)
        .orderBy("seq", "desc")
        .limit(1)
        .executeTakeFirst();
      return row?.seq == null || row.hash === null ? undefined : { seq: Number(row.seq), hash: row.hash };
    },

    /** Rows still to seal, in the order they happened: ids are UUIDv7, increasing within an instance. */
    async unsealed(tenantId: string, limit: number): Promise<AuditRecord[]> {
      const rows = await db
        .selectFrom("audit_log")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .where("seq", "is", null)
        .orderBy("id")
        .limit(limit)
        .execute();
      return rows.map(fromRow);
    },

    /** Seals rows in order; one statement, compiled once, with new values for each row. */
    async seal(rows: readonly { record: AuditRecord; seq: number; hash: string }[]): Promise<void> {
      // The row's whole key, so that the update finds it in the table itself (migration 0009).
      const statement = db
        .updateTable("audit_log")
        .set({ seq: 0, hash: "" })
        .where("tenant_id", "=", "")
        .where("occurred_at", "=", "")
        .where("id", "=", "")
        .where("seq", "is", null)
        .compile();
      for (const { record, seq, hash } of rows) {
        await db.executeQuery(
          CompiledQuery.raw(statement.sql, [seq, hash, record.tenantId, record.occurredAt, record.id]),
        );
      }
    },

    /** Sealed rows after `afterSeq`, in chain order: what verification walks. */
    async sealedAfter(tenantId: string, afterSeq: number, limit: number): Promise<AuditRecord[]> {
      const rows = await db
        .selectFrom("audit_log")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .where("seq", ">", afterSeq)
        .orderBy("seq")
        .limit(limit)
        .execute();
      return rows.map(fromRow);
    },

    async countUnsealedBefore(tenantId: string, before: string): Promise<number> {
      const row = await db
        .selectFrom("audit_log")
        .select((eb) => eb.fn.countAll().as("n"))
        .where("tenant_id", "=", tenantId)
        .where("seq", "is", null)
        .where("occurred_at", "<", before)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },
  };
}
