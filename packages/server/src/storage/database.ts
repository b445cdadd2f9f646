import type { CompiledQuery, Kysely } from "kysely";
import type { Database } from "./schema.js";

/**
 * The store contract: what features see of the database, whichever engine it is (sqlite.ts, postgres.ts).
 */

/** A query handle: the database itself or an open transaction (Kysely's Transaction extends Kysely). */
export type Executor = Kysely<Database>;

/**
 * Runs a precompiled single-row SELECT on the hot path (authentication, token lookup) and answers its first row.
 * It sees committed data only, never the writes of a group commit still under way.
 */
export type ReadOne = <Row>(query: CompiledQuery) => Promise<Row | undefined>;

/**
 * Runs one precompiled write statement inside the write it is given to (Store.write): on SQLite directly on the
 * connection, which that write's transaction holds; elsewhere through the transaction.
 */
export type RunWrite = (query: CompiledQuery) => Promise<void>;

/** Like ReadOne, for every row: searches, whose statements are read-only and may take a while. */
export type ReadAll = <Row>(query: CompiledQuery) => Promise<Row[]>;

/**
 * Like ReadAll, each row as an array of its columns in select order. A page of search results is read this way:
 * better-sqlite3 builds an object row one property at a time, which cost more per token than reading it.
 */
export type ReadArrays = <Row extends readonly unknown[]>(query: CompiledQuery) => Promise<Row[]>;

/** The plain path, through Kysely; used on PostgreSQL and whenever no faster reader exists. */
export function readOneThrough(db: Executor): ReadOne {
  return async <Row>(query: CompiledQuery) => (await db.executeQuery<Row>(query)).rows[0];
}

export function readAllThrough(db: Executor): ReadAll {
  return async <Row>(query: CompiledQuery) => (await db.executeQuery<Row>(query)).rows;
}

/** Drivers answer objects whose members come in select order; the statements never repeat a column name. */
export function readArraysThrough(db: Executor): ReadArrays {
  return async <Row extends readonly unknown[]>(query: CompiledQuery) =>
    (await db.executeQuery<Record<string, unknown>>(query)).rows.map(
      (row) => Object.values(row) as unknown as Row,
    );
}

export function runThrough(db: Executor): RunWrite {
  return async (query) => {
    await db.executeQuery(query);
  };
}

/**
 * One write's handle on the database, handed to stores: `db` for queries built there and then, `run` for the
 * precompiled statements of the hot path (on SQLite straight on the connection the write's transaction holds).
 * Services pass it along whole, and never reach into it.
 */
export interface WriteContext {
  readonly db: Executor;
  readonly run: RunWrite;
}

/** The write context of a transaction opened with Store.transaction. */
export function writeContext(trx: Executor): WriteContext {
  return { db: trx, run: runThrough(trx) };
}

/** The read paths a store offers beside its query builder. */
export type Reads = Pick<
  Store,
  "readOne" | "readAll" | "readArrays" | "tokenVersion" | "configVersion" | "versions"
>;

export function readsThrough(db: Executor): Reads {
  return {
    readOne: readOneThrough(db),
    readAll: readAllThrough(db),
    readArrays: readArraysThrough(db),
    tokenVersion: () => undefined,
    configVersion: () => undefined,
    versions: () => undefined,
  };
}

export interface Store {
  readonly dialect: "sqlite" | "postgres";
  readonly db: Executor;
  readonly readOne: ReadOne;
  readonly readAll: ReadAll;
  readonly readArrays: ReadArrays;
  /**
   * A number that changes whenever a token row is written, by this process or another, in the write's own
   * transaction (migration 0008); undefined where there is none (PostgreSQL). Lets a cache of search results be
   * exact rather than merely recent.
   */
  tokenVersion(): number | undefined;
  /**
   * Likewise for Applications and reactors (migration 0010): lets the rows every request looks up be kept in
   * memory while they are unchanged (versioned-cache.ts).
   */
  configVersion(): number | undefined;
  /**
   * Both versions in one read: what a request reads once, when it is authenticated, so that its later lookups of
   * rows kept in memory (its reactor, its tokens) cost no read at all.
   */
  versions(): StoreVersions | undefined;
  /**
   * Runs `fn` in one transaction; on PostgreSQL `lock` names an advisory lock held until it ends, and `snapshot`
   * makes every statement see the same committed state (repeatable read; PostgreSQL's default, read committed,
   * lets a commit land between two reads). SQLite's transactions are snapshots already.
   */
  transaction<T>(fn: (trx: Executor) => Promise<T>, options?: TransactionOptions): Promise<T>;
  /**
   * After rows that held key material were deleted (crypto-shredding, docs/keys.md#shredding-a-tenant): leaves no
   * copy of them in the store's files where the engine allows it. SQLite zeroes what is deleted as it deletes it
   * (secure_delete), but the WAL still holds the pages as they were: it is checkpointed into the database file and
   * truncated to nothing; answers whether that happened (another connection's open read can hold it back).
   * PostgreSQL keeps dead rows until VACUUM reuses their space, and its WAL and archives keep them longer: false.
   */
  scrubDeleted(): Promise<boolean>;
  /**
   * A durable write on the hot path. It resolves only after its changes are committed, but it may share that
   * commit with concurrent writes (group commit on SQLite); a write that throws is rolled back alone. `fn` must
   * do all its database work through its WriteContext.
   *
   * `lazy`: committed before it resolves (visible, and kept if this process dies), but on SQLite flushed to disk
   * up to LAZY_SYNC_MS later, or with the next durable write, whichever comes first: for the records of reads
   * (the audit log), which must not cost every read an fsync. PostgreSQL commits it like any write.
   *
   * `alone`: `fn` runs exactly one statement, through `run` (a second one fails the write before it runs). A
   * statement is atomic by itself, so PostgreSQL runs it as its own transaction, committed (and, with
   * synchronous_commit on, flushed) before it answers: one round trip instead of begin, statement and commit.
   * SQLite's group commit is unchanged by it.
   */
  write<T>(fn: (write: WriteContext) => Promise<T>, options?: WriteOptions): Promise<T>;
  ping(): Promise<void>;
  /** For metrics: connections open and idle, and work waiting for one (queued writes on SQLite). */
  poolStats(): PoolStats;
  close(): Promise<void>;
}

export interface WriteOptions {
  readonly lazy?: boolean;
  readonly alone?: boolean;
}

export interface StoreVersions {
  readonly config: number;
  readonly tokens: number;
}

/**
 * What a request read once, when it was authenticated, for its later reads: the store's versions (SQLite only),
 * against which its lookups of rows kept in memory (its reactor, its tokens) are checked instead of reading them
 * again. The route layer passes it down; a read without one reads the versions itself.
 */
export interface ReadContext {
  readonly versions?: StoreVersions;
}

export interface TransactionOptions {
  readonly lock?: string;
  readonly snapshot?: boolean;
}

export interface PoolStats {
  readonly connections: number;
  readonly idle: number;
  readonly waiting: number;
}

/** True when `error` is a unique or primary-key violation on either engine; callers turn it into a 409. */
export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const code = (error as { code?: unknown }).code;
  return code === "23505" || code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}
