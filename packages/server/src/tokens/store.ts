import { createHash } from "node:crypto";
import {
  CompiledQuery,
  PostgresAdapter,
  sql,
  type Expression,
  type ExpressionBuilder,
  type Selectable,
  type SqlBool,
} from "kysely";
import { containerPaths, ROOT, type Reach } from "../access/decide.js";
import { normalizeContainer, type Condition } from "../access/rules.js";
import type { PageRow } from "../search/run.js";
import {
  readsThrough,
  type Executor,
  type Reads,
  type RunWrite,
  type WriteContext,
} from "../storage/database.js";
import type { Database, TokensTable } from "../storage/schema.js";
import { versionedCache } from "../storage/versioned-cache.js";
import type { TokenType } from "./token-types.js";
import type { MaskExpression, SealedData, TokenIndexRows, TokenRecord } from "./types.js";
import { pageAndCount } from "../storage/page-query.js";

type Row = Selectable<TokensTable>;

export interface StoredToken {
  readonly record: TokenRecord;
  readonly sealed: SealedData;
}

function fromRow(row: Row): StoredToken {
  return {
    record: {
      id: row.id,
      tenantId: row.tenant_id,
      type: row.type as TokenType,
      fingerprint: row.fingerprint,
      fingerprintExpression: row.fingerprint_expression,
      mask: row.mask === null ? null : (JSON.parse(row.mask) as MaskExpression),
      searchIndexes: JSON.parse(row.search_indexes) as string[],
      metadata: JSON.parse(row.metadata) as Record<string, string>,
      containers: JSON.parse(row.containers) as string[],
      expiresAt: row.expires_at,
      createdBy: row.created_by,
      createdAt: row.created_at,
      modifiedBy: row.modified_by,
      modifiedAt: row.modified_at,
    },
    sealed: { ciphertext: row.ciphertext, keyVersion: row.key_version },
  };
}

/** A token from a row of a search page (search/run.ts). */
export function fromPageRow(tenantId: string, row: PageRow): StoredToken {
  const [id, type, ciphertext, keyVersion, fingerprint, fingerprintExpression, mask, searchIndexes] = row;
  const [, , , , , , , , metadata, containers, expiresAt, createdBy, createdAt, modifiedBy, modifiedAt] = row;
  return {
    record: {
      id,
      tenantId,
      type: type as TokenType,
      fingerprint,
      fingerprintExpression,
      mask: mask === null ? null : (JSON.parse(mask) as MaskExpression),
      searchIndexes: JSON.parse(searchIndexes) as string[],
      metadata: JSON.parse(metadata) as Record<string, string>,
      containers: JSON.parse(containers) as string[],
      expiresAt,
      createdBy,
      createdAt,
      modifiedBy,
      modifiedAt,
    },
    sealed: { ciphertext, keyVersion },
  };
}

/** Any well-typed row: compiling an INSERT needs values, but only the SQL text is kept. */
const PROBE_SEALED: SealedData = { ciphertext: "", keyVersion: 0 };
const PROBE_RECORD: TokenRecord = {
  id: "",
  tenantId: "",
  type: "token",
  fingerprint: "",
  fingerprintExpression: "",
  mask: "",
  searchIndexes: [],
  metadata: {},
  containers: [],
  expiresAt: "",
  createdBy: "",
  createdAt: "",
  modifiedBy: "",
  modifiedAt: "",
};

/** Column order matters: INSERTs are precompiled and take these values positionally. */
function toRow(record: TokenRecord, sealed: SealedData): Row {
  return {
    tenant_id: record.tenantId,
    id: record.id,
    type: record.type,
    ciphertext: sealed.ciphertext,
    key_version: sealed.keyVersion,
    fingerprint: record.fingerprint,
    fingerprint_expression: record.fingerprintExpression,
    mask: record.mask === null ? null : JSON.stringify(record.mask),
    search_indexes: JSON.stringify(record.searchIndexes),
    metadata: JSON.stringify(record.metadata),
    containers: JSON.stringify(record.containers),
    expires_at: record.expiresAt,
    created_by: record.createdBy,
    created_at: record.createdAt,
    modified_by: record.modifiedBy,
    modified_at: record.modifiedAt,
  };
}

export interface TokenListFilter {
  readonly ids: readonly string[];
  readonly type?: string;
  /** Exact, case-folded metadata matches, all of which must hold. */
  readonly metadata: readonly (readonly [key: string, folded: string])[];
  /** What the caller's rules for reading reach (access/decide.ts reachOf); only those tokens are listed. */
  readonly readable: Reach;
  readonly now: string;
  readonly offset: number;
  readonly limit: number;
}

/**
 * Tokens kept in memory per store, as stored: sealed data, never plaintext. 4,096 rows of about 1 KB each: the
 * tokens a vault's callers keep reading (the cards of a checkout flow, a reactor's arguments), not the whole table.
 */
const TOKEN_CACHE_SIZE = 4_096;

/** Keyed by tenant and id together: another tenant's id must miss, as the query would. */
const rowKey = (tenantId: string, id: string) => `${tenantId}/${id}`;

/** The queries' own test, for rows that come from memory: ISO timestamps compare as text in SQL too. */
const unexpired = (stored: StoredToken, now: string) =>
  stored.record.expiresAt === null || stored.record.expiresAt > now;

/**
 * A 64-bit advisory-lock key for one deduplication value. Other advisory locks (key rotation, the audit chain) use
 * `hashtext`, 32 bits: a collision with them, like one between two values, only makes a create wait a moment.
 */
function advisoryKey(tenantId: string, type: string, fingerprint: string): bigint {
  return createHash("sha256")
    .update(`tessera:deduplicate\u0000${tenantId}\u0000${type}\u0000${fingerprint}`)
    .digest()
    .readBigInt64BE(0);
}

/** Every query is scoped by tenant, and an expired token is invisible from the moment it expires. */
export function tokenStore(db: Executor, reads: Reads = readsThrough(db)) {
  const { readOne, readAll } = reads;
  // Lookups by id go through memory while no token has been written (Store.tokenVersion, which any token write
  // by any connection moves in its own transaction): a read after a commit otherwise pays SQLite's reset of the
  // reader's page cache, most of what a react's and a token read's lookups cost.
  const rows = versionedCache<StoredToken>(reads.tokenVersion, TOKEN_CACHE_SIZE);
  // Every read of a token runs this: compiled once per store (on first use), then only its parameters change.
  let byId: CompiledQuery | undefined;
  const compileById = () =>
    db
      .selectFrom("tokens")
      .selectAll()
      .where("tenant_id", "=", "")
      .where("id", "=", "")
      .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", "")]))
      .compile();

  // Detokenization and every react run this: one statement per number of ids (at most 100, the API's limit).
  const byIds = new Map<number, CompiledQuery>();
  const compileByIds = (count: number) =>
    db
      .selectFrom("tokens")
      .selectAll()
      .where("tenant_id", "=", "")
      .where(
        "id",
        "in",
        Array.from({ length: count }, () => ""),
      )
      .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", "")]))
      .compile();

  // Creates run these on every request: compiled once per store from `db`, executed on whichever executor
  // (the database or a transaction) the call is given. The index rows repeat the token's created_at, type and
  // expiry in this order (see storage/schema.ts IndexedTokenColumns).
  let statements: ReturnType<typeof compileInserts> | undefined;
  const tail = { created_at: "", token_id: "", type: "", expires_at: "" };
  const compileInserts = () => ({
    token: db.insertInto("tokens").values(toRow(PROBE_RECORD, PROBE_SEALED)).compile(),
    data: db
      .insertInto("token_data_index")
      .values({ tenant_id: "", blind_value: "", ...tail })
      .compile(),
    container: db
      .insertInto("token_container_index")
      .values({ tenant_id: "", path: "", exact: 0, ...tail })
      .compile(),
    metadata: db
      .insertInto("token_metadata_index")
      .values({ tenant_id: "", key: "", value_folded: "", ...tail })
      .compile(),
  });

  async function insertIndexRows(run: RunWrite, record: TokenRecord, rows: TokenIndexRows) {
    statements ??= compileInserts();
    const tailValues = [record.createdAt, record.id, record.type, record.expiresAt];
    const insert = (query: CompiledQuery, key: unknown[]) =>
      run(CompiledQuery.raw(query.sql, [record.tenantId, ...key, ...tailValues]));
    for (const blind of new Set(rows.blindValues)) await insert(statements.data, [blind]);
    for (const [path, exact] of containerPaths(rows.containers)) {
      await insert(statements.container, [path, exact ? 1 : 0]);
    }
    for (const [key, folded] of rows.metadata) await insert(statements.metadata, [key, folded]);
  }

  async function deleteIndexRows(trx: Executor, tenantId: string, tokenId: string): Promise<void> {
    for (const table of ["token_data_index", "token_container_index", "token_metadata_index"] as const) {
      await trx.deleteFrom(table).where("tenant_id", "=", tenantId).where("token_id", "=", tokenId).execute();
    }
  }

  return {
    /**
     * The writes run in the write they are given (Store.write): a token never exists without its index rows, nor
     * they without it. Statements are compiled once per store, then run on that write's connection.
     */
    async insert(
      { run }: WriteContext,
      record: TokenRecord,
      sealed: SealedData,
      rows: TokenIndexRows,
    ): Promise<void> {
      statements ??= compileInserts();
      await run(CompiledQuery.raw(statements.token.sql, Object.values(toRow(record, sealed))));
      await insertIndexRows(run, record, rows);
    },

    /**
     * Rewrites a token read earlier, but only if it still holds the ciphertext that was read (`expected`): a
     * concurrent update or rewrap in between makes this a no-op instead of being silently overwritten.
     */
    async replace(
      write: WriteContext,
      record: TokenRecord,
      sealed: SealedData,
      rows: TokenIndexRows,
      expected: SealedData,
    ): Promise<boolean> {
      const { tenant_id, id, ...fields } = toRow(record, sealed);
      const result = await write.db
        .updateTable("tokens")
        .set(fields)
        .where("tenant_id", "=", tenant_id)
        .where("id", "=", id)
        .where("ciphertext", "=", expected.ciphertext)
        .executeTakeFirst();
      if (result.numUpdatedRows === 0n) return false;
      await deleteIndexRows(write.db, tenant_id, id);
      await insertIndexRows(write.run, record, rows);
      return true;
    },

    /** `at`: the token version read when the request was authenticated (ReadContext). */
    async findById(tenantId: string, id: string, now: string, at?: number): Promise<StoredToken | undefined> {
      const stored = await rows(
        rowKey(tenantId, id),
        async () => {
          byId ??= compileById();
          const row = await readOne<Row>(CompiledQuery.raw(byId.sql, [tenantId, id, now]));
          return row && fromRow(row);
        },
        at,
      );
      return stored !== undefined && unexpired(stored, now) ? stored : undefined;
    },

    /** In the order of `ids`, those that exist and have not expired. */
    async findManyByIds(
      tenantId: string,
      ids: readonly string[],
      now: string,
      at?: number,
    ): Promise<StoredToken[]> {
      if (ids.length === 0) return [];
      const found = await rows.many(
        ids.map((id) => rowKey(tenantId, id)),
        async (missing) => {
          let statement = byIds.get(missing.length);
          if (statement === undefined) {
            statement = compileByIds(missing.length);
            byIds.set(missing.length, statement);
          }
          // Back from rowKey's `<tenant>/<id>` to the id.
          const missingIds = missing.map((key) => key.slice(tenantId.length + 1));
          const loaded = await readAll<Row>(CompiledQuery.raw(statement.sql, [tenantId, ...missingIds, now]));
          return new Map(loaded.map((row) => [rowKey(tenantId, row.id), fromRow(row)]));
        },
        at,
      );
      return ids.flatMap((id) => {
        const stored = found.get(rowKey(tenantId, id));
        return stored !== undefined && unexpired(stored, now) ? [stored] : [];
      });
    },

    /**
     * Deduplication's lock (issue 15): on PostgreSQL two transactions that both look for a fingerprint before either
     * inserts would both find nothing and create two tokens. A transaction-scoped advisory lock per (tenant, type,
     * fingerprint), taken before the lookup, makes the second wait for the first to commit; its lookup then sees
     * the winner's row (writes run at READ COMMITTED: each statement sees what committed before it began). Keys
     * are taken in ascending order, so that transactions locking several cannot deadlock. SQLite runs one write at
     * a time, so there is nothing to take.
     */
    async lockFingerprints(
      { db: trx }: WriteContext,
      tenantId: string,
      entries: readonly { readonly type: string; readonly fingerprint: string }[],
    ): Promise<void> {
      if (entries.length === 0 || !(trx.getExecutor().adapter instanceof PostgresAdapter)) return;
      const keys = [...new Set(entries.map((e) => advisoryKey(tenantId, e.type, e.fingerprint)))].sort(
        (a, b) => (a < b ? -1 : a > b ? 1 : 0),
      );
      for (const key of keys) await sql`select pg_advisory_xact_lock(${key.toString()}::bigint)`.execute(trx);
    },

    /** Inside the write that holds the fingerprint's lock (lockFingerprints). */
    async findByFingerprint(
      { db: trx }: WriteContext,
      tenantId: string,
      type: string,
      fingerprint: string,
      now: string,
    ): Promise<StoredToken | undefined> {
      const row = await trx
        .selectFrom("tokens")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .where("fingerprint", "=", fingerprint)
        .where("type", "=", type)
        .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", now)]))
        .orderBy("created_at")
        .limit(1)
        .executeTakeFirst();
      return row && fromRow(row);
    },

    /** Index rows go with the token (foreign keys with ON DELETE CASCADE on both engines). */
    async delete({ db: trx }: WriteContext, tenantId: string, id: string): Promise<boolean> {
      const result = await trx
        .deleteFrom("tokens")
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    async list(tenantId: string, filter: TokenListFilter): Promise<{ items: StoredToken[]; total: number }> {
      const { paths, conditions } = filter.readable;
      if (paths.length === 0 || conditions?.length === 0) return { items: [], total: 0 };
      let query = db
        .selectFrom("tokens as t")
        .where("t.tenant_id", "=", tenantId)
        .where((eb) => eb.or([eb("t.expires_at", "is", null), eb("t.expires_at", ">", filter.now)]));
      if (filter.ids.length > 0) query = query.where("t.id", "in", filter.ids);
      if (filter.type !== undefined) query = query.where("t.type", "=", filter.type);
      for (const [key, folded] of filter.metadata) {
        query = query.where("t.id", "in", (eb) =>
          eb
            .selectFrom("token_metadata_index as m")
            .select("m.token_id")
            .where("m.tenant_id", "=", tenantId)
            .where("m.key", "=", key)
            .where("m.value_folded", "=", folded),
        );
      }
      // Visibility is part of the query, not a filter afterwards, so pages are full and totals are right.
      if (!paths.includes(ROOT)) {
        query = query.where((eb) =>
          eb.exists(
            eb
              .selectFrom("token_container_index as c")
              .select(sql.lit(1).as("one"))
              .where("c.tenant_id", "=", tenantId)
              .whereRef("c.token_id", "=", "t.id")
              .where("c.path", "in", paths),
          ),
        );
      }
      // A session's condition rules: at least one of them with every condition holding (access/decide.ts).
      if (conditions !== undefined) {
        query = query.where((eb) =>
          eb.or(conditions.map((all) => eb.and(all.map((c) => conditionHolds(eb, tenantId, c))))),
        );
      }
      const { rows, total } = await pageAndCount(
        query,
        (q) => q.selectAll("t").orderBy("t.created_at", "desc").orderBy("t.id", "desc"),
        filter,
      );
      return { items: rows.map(fromRow), total };
    },

    /** Tokens still sealed under a data key older than `version`, for `keys rewrap`. */
    async listSealedBefore(tenantId: string, version: number, limit: number): Promise<StoredToken[]> {
      const rows = await db
        .selectFrom("tokens")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .where("key_version", "<", version)
        .orderBy("id")
        .limit(limit)
        .execute();
      return rows.map(fromRow);
    },

    async countSealedBefore(tenantId: string, version: number): Promise<number> {
      const row = await db
        .selectFrom("tokens")
        .select((eb) => eb.fn.countAll().as("n"))
        .where("tenant_id", "=", tenantId)
        .where("key_version", "<", version)
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },

    /**
     * Swaps the ciphertext only if it is still the one that was read: a request that rewrote the token in the
     * meantime wins, and the rewrap simply finds nothing left to do for it.
     */
    async reseal(tenantId: string, id: string, from: SealedData, to: SealedData): Promise<boolean> {
      const result = await db
        .updateTable("tokens")
        .set({ ciphertext: to.ciphertext, key_version: to.keyVersion })
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .where("key_version", "=", from.keyVersion)
        .where("ciphertext", "=", from.ciphertext)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async deleteExpired(now: string): Promise<number> {
      const result = await db.deleteFrom("tokens").where("expires_at", "<=", now).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type TokenStore = ReturnType<typeof tokenStore>;

/**
 * A session rule's condition as SQL over `tokens as t`, meaning exactly what access/decide.ts conditionHolds
 * does: `id` compared with the id (a prefix by its first characters, so no LIKE wildcard can sneak in), a
 * `container` through the index rows every path a token lies under has (`exact` for the container itself).
 */
function conditionHolds(
  eb: ExpressionBuilder<Database & { t: Database["tokens"] }, "t">,
  tenantId: string,
  condition: Condition,
): Expression<SqlBool> {
  if (condition.attribute === "id") {
    if (condition.operator === "equals") return eb("t.id", "=", condition.value);
    const value = condition.value;
    return sql<SqlBool>`substr(t.id, 1, length(cast(${value} as text))) = ${value}`;
  }
  const path = normalizeContainer(condition.value);
  if (path === ROOT && condition.operator === "starts_with") return sql<SqlBool>`1 = 1`;
  return eb.exists(
    eb
      .selectFrom("token_container_index as c")
      .select(sql.lit(1).as("one"))
      .where("c.tenant_id", "=", tenantId)
      .whereRef("c.token_id", "=", "t.id")
      .where("c.path", "=", path)
      .$if(condition.operator === "equals", (q) => q.where("c.exact", "=", 1)),
  );
}
