import type { Clock } from "../clock.js";
import { uuidv7 } from "../crypto/uuid-v7.js";
import { AppError } from "../server/errors.js";
import type { Executor, Store } from "../storage/database.js";
import { auditStore } from "./store.js";
import type { AuditEntry, AuditRecord } from "./types.js";

/**
 * Records audit entries, failing closed: a change's entries are written in the change's own transaction, so
 * neither exists without the other; a read's entries are committed before the read is answered, and if that
 * fails the read fails. Entries are chained later by the sealer (sealer.ts).
 */
export interface AuditRecorder {
  /** As part of `trx`: the entries commit or roll back with the change they record. */
  within(trx: Executor, entries: readonly AuditEntry[]): Promise<void>;
  /** A durable write of its own (a group commit on SQLite), for reads: resolves once it is committed. */
  record(entries: readonly AuditEntry[]): Promise<void>;
}

export function createAuditRecorder(deps: { store: Pick<Store, "write">; clock: Clock }): AuditRecorder {
  function records(entries: readonly AuditEntry[]): AuditRecord[] {
    const now = deps.clock.now();
    return entries.map((entry) => ({
      id: uuidv7(now.getTime()),
      tenantId: entry.tenantId,
      occurredAt: now.toISOString(),
      actorId: entry.actorId,
      action: entry.action,
      entityType: entry.entityType,
      entityId: entry.entityId,
      rule: entry.rule === undefined ? null : JSON.stringify(entry.rule),
      details: entry.details === undefined ? null : JSON.stringify(entry.details),
      requestId: entry.requestId ?? null,
      seq: null,
      hash: null,
    }));
  }

  return {
    async within(trx, entries) {
      if (entries.length === 0) return;
      await auditStore(trx).insert(records(entries)).catch(failClosed);
    },
    async record(entries) {
      if (entries.length === 0) return;
      const rows = records(entries);
      await deps.store.write((trx) => auditStore(trx).insert(rows)).catch(failClosed);
    },
  };
}

/** Nothing is done, or shown, that the log could not record: the request fails as the server's fault. */
function failClosed(cause: unknown): never {
  // The cause stays on the error for the log line the error handler writes for every 5xx.
  throw Object.assign(
    new AppError("unavailable", "The audit log could not be written, so the request was not carried out."),
    { cause },
  );
}
