import { PostgresAdapter, type CompiledQuery } from "kysely";
import type { Clock } from "../shared/clock.js";
import { uuidv7 } from "../crypto/uuid-v7.js";
import { AppError } from "../server/errors.js";
import { storeOutage } from "../storage/availability.js";
import type { RunWrite, Store, WriteContext } from "../storage/database.js";
import { auditInsert } from "./store.js";
import type { AuditEntry } from "./types.js";

/**
 * Records audit entries, failing closed: a change's entries are written in the change's own transaction, so
 * neither exists without the other; a read's entries are committed before the read is answered, and if that
 * fails the read fails. Entries are chained later by the sealer (sealer.ts).
 */
export interface AuditRecorder {
  /** As part of `write`: the entries commit or roll back with the change they record. */
  within(write: WriteContext, entries: readonly AuditEntry[]): Promise<void>;
  /** A write of its own for reads (a group commit on SQLite): resolves once it is committed. */
  record(entries: readonly AuditEntry[]): Promise<void>;
}

export function createAuditRecorder(deps: {
  store: Pick<Store, "write" | "db">;
  clock: Clock;
}): AuditRecorder {
  // Every request writes one: compiled once, then only the values change (as the token inserts do).
  let insertOf: ((values: readonly unknown[]) => CompiledQuery) | undefined;
  const onPostgres = deps.store.db.getExecutor().adapter instanceof PostgresAdapter;

  async function insert(run: RunWrite, entries: readonly AuditEntry[]): Promise<void> {
    const now = deps.clock.now();
    insertOf ??= auditInsert(deps.store.db);
    for (const entry of entries) {
      await run(
        insertOf([
          uuidv7(now.getTime()),
          entry.tenantId,
          now.toISOString(),
          entry.actorId,
          entry.action,
          entry.entityType,
          entry.entityId,
          entry.rule === undefined ? null : JSON.stringify(entry.rule),
          entry.details === undefined ? null : JSON.stringify(entry.details),
          entry.requestId ?? null,
        ]),
      );
    }
  }

  return {
    async within({ run }, entries) {
      if (entries.length > 0) await insert(run, entries).catch(failClosed);
    },
    async record(entries) {
      if (entries.length === 1 && onPostgres) {
        // One statement commits by itself, as durably as in a transaction of its own (fsynced before it answers
        // when synchronous_commit is on), in one round trip instead of three (BEGIN, INSERT, COMMIT): the cost of
        // every audited read on PostgreSQL (issue 23).
        await insert((query) => deps.store.db.executeQuery(query).then(() => undefined), entries).catch(
          failClosed,
        );
        return;
      }
      if (entries.length > 0) {
        // Lazy: committed before the read is answered, on disk within LAZY_SYNC_MS (docs/audit.md#cost).
        await deps.store.write(({ run }) => insert(run, entries), { lazy: true }).catch(failClosed);
      }
    },
  };
}

/**
 * Nothing is done, or shown, that the log could not record: the request fails as the server's fault, or as the
 * store's when it is unavailable (a 503 with Retry-After, like any other write in an outage).
 */
function failClosed(cause: unknown): never {
  const outage = storeOutage(cause);
  // The cause stays on the error for the log line the error handler writes for every 5xx.
  throw Object.assign(
    outage === undefined
      ? new AppError("unavailable", "The audit log could not be written, so the request was not carried out.")
      : AppError.storeUnavailable(outage),
    { cause },
  );
}
