import { CompiledQuery, sql, type Selectable } from "kysely";
import { foldCase } from "../crypto/blind-index.js";
import { readsThrough, type Executor, type Reads } from "../storage/database.js";
import { versionedCache } from "../storage/versioned-cache.js";
import type { ReactorsTable } from "../storage/schema.js";
import type { ReactorRecord, SealedConfiguration } from "./types.js";
import { pageAndCount } from "../storage/page-query.js";

type Row = Selectable<ReactorsTable>;

/** Reactors invoked lately; each holds its code (at most 50,000 characters) and sealed configuration. */
const REACTOR_CACHE_SIZE = 1_000;

export interface StoredReactor {
  readonly record: ReactorRecord;
  readonly sealed: SealedConfiguration;
}

function fromRow(row: Row): StoredReactor {
  return {
    record: {
      id: row.id,
      tenantId: row.tenant_id,
      name: row.name,
      code: row.code,
      applicationId: row.application_id,
      version: Number(row.version),
      createdBy: row.created_by,
      createdAt: row.created_at,
      modifiedBy: row.modified_by,
      modifiedAt: row.modified_at,
    },
    sealed: { ciphertext: row.configuration, keyVersion: Number(row.key_version) },
  };
}

/** What an update writes; `version` and the creation columns are the store's to keep. */
export interface ReactorChanges {
  readonly name: string;
  readonly code: string;
  readonly applicationId: string | null;
  readonly sealed: SealedConfiguration;
  readonly modifiedBy: string;
  readonly modifiedAt: string;
}

export interface ReactorListFilter {
  readonly ids: readonly string[];
  /** The name filter as the caller wrote it (DESIGN §6). */
  readonly name?: string;
  readonly offset: number;
  readonly limit: number;
}

/**
 * DESIGN §6: a case-insensitive substring match, or, when the filter holds a `*`, a match of the whole name
 * with each `*` standing for any run of characters. Both sides are folded alike (the stored `name_folded`),
 * so both engines agree on what matches; LIKE's own metacharacters in the filter match themselves.
 */
export function namePattern(filter: string): string {
  const escaped = foldCase(filter).replace(/[\\%_]/g, (c) => `\\${c}`);
  return filter.includes("*") ? escaped.replace(/\*/g, "%") : `%${escaped}%`;
}

/**
 * Every query is scoped by tenant (DESIGN §5.4). `reads` serves the lookup every react makes (the store's reader
 * connection on SQLite); inside a transaction it is the transaction itself.
 */
export function reactorStore(
  db: Executor,
  { readOne, configVersion }: Pick<Reads, "readOne" | "configVersion"> = readsThrough(db),
) {
  let byId: CompiledQuery | undefined;
  // Keyed by tenant and id together: a reactor id from another tenant must miss, as the query would.
  const byIdCached = versionedCache<StoredReactor>(configVersion, REACTOR_CACHE_SIZE);
  return {
    async insert(record: ReactorRecord, sealed: SealedConfiguration): Promise<void> {
      await db
        .insertInto("reactors")
        .values({
          id: record.id,
          tenant_id: record.tenantId,
          name: record.name,
          name_folded: foldCase(record.name),
          code: record.code,
          configuration: sealed.ciphertext,
          key_version: sealed.keyVersion,
          application_id: record.applicationId,
          version: record.version,
          created_by: record.createdBy,
          created_at: record.createdAt,
          modified_by: record.modifiedBy,
          modified_at: record.modifiedAt,
        })
        .execute();
    },

    /** `at`: a configVersion read earlier in the same request (versioned-cache.ts). */
    findById(tenantId: string, id: string, at?: number): Promise<StoredReactor | undefined> {
      return byIdCached(
        `${tenantId}/${id}`,
        async () => {
          byId ??= db
            .selectFrom("reactors")
            .selectAll()
            .where("tenant_id", "=", "")
            .where("id", "=", "")
            .compile();
          const row = await readOne<Row>(CompiledQuery.raw(byId.sql, [tenantId, id]));
          return row && fromRow(row);
        },
        at,
      );
    },

    async list(
      tenantId: string,
      filter: ReactorListFilter,
    ): Promise<{ items: StoredReactor[]; total: number }> {
      let query = db.selectFrom("reactors").where("tenant_id", "=", tenantId);
      if (filter.ids.length > 0) query = query.where("id", "in", filter.ids);
      if (filter.name !== undefined) {
        query = query.where(sql<boolean>`name_folded like ${namePattern(filter.name)} escape '\\'`);
      }
      const { rows, total } = await pageAndCount(
        query,
        (q) => q.selectAll().orderBy("created_at").orderBy("id"),
        filter,
      );
      return { items: rows.map(fromRow), total };
    },

    /**
     * The reactor as it is now, its row locked until the transaction `db` is ends; undefined when the tenant has
     * no such reactor. The lock is taken by a write that changes nothing, the one statement both engines lock a
     * row with: on PostgreSQL it holds the row, so another transaction locking it waits for this one to end and
     * then reads what it wrote; on SQLite it takes the database's write lock before anything is read, so no other
     * process's commit can come between this read and the update that follows it.
     */
    async lockForUpdate(tenantId: string, id: string): Promise<StoredReactor | undefined> {
      const row = await db
        .updateTable("reactors")
        .set((eb) => ({ version: eb.ref("version") }))
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirst();
      return row && fromRow(row);
    },

    /** Writes `changes` and moves the version on by one; in the transaction that locked the row. */
    async update(tenantId: string, id: string, changes: ReactorChanges): Promise<void> {
      await db
        .updateTable("reactors")
        .set((eb) => ({
          name: changes.name,
          name_folded: foldCase(changes.name),
          code: changes.code,
          configuration: changes.sealed.ciphertext,
          key_version: changes.sealed.keyVersion,
          application_id: changes.applicationId,
          version: eb("version", "+", 1),
          modified_by: changes.modifiedBy,
          modified_at: changes.modifiedAt,
        }))
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .execute();
    },

    async delete(tenantId: string, id: string): Promise<boolean> {
      const result = await db
        .deleteFrom("reactors")
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    /** Reactors whose configuration is still sealed under a data key older than `version`, for `keys rewrap`. */
    async listSealedBefore(tenantId: string, version: number, limit: number): Promise<StoredReactor[]> {
      const rows = await db
        .selectFrom("reactors")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .where("key_version", "<", version)
        .orderBy("id")
        .limit(limit)
        .execute();
      return rows.map(fromRow);
    },

    /**
     * Swaps the ciphertext only if it is still the one that was read: an update in the meantime sealed the
     * configuration afresh under the newest key, and wins. The version stays: the configuration did not change.
     */
    async reseal(
      tenantId: string,
      id: string,
      from: SealedConfiguration,
      to: SealedConfiguration,
    ): Promise<boolean> {
      const result = await db
        .updateTable("reactors")
        .set({ configuration: to.ciphertext, key_version: to.keyVersion })
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .where("key_version", "=", from.keyVersion)
        .where("configuration", "=", from.ciphertext)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },
  };
}

export type ReactorStore = ReturnType<typeof reactorStore>;
