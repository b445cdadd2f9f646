import { chmodSync, closeSync, mkdirSync, openSync, statSync } from "node:fs";
import { open } from "node:fs/promises";
import path from "node:path";
import SQLite from "better-sqlite3";
import { Kysely, PostgresDialect, SqliteDialect, sql, type CompiledQuery } from "kysely";
import pg from "pg";
import { ConfigError } from "../shared/config-error.js";
import type { DatabaseConfig } from "./settings.js";
import { AUTOCHECKPOINT_PAGES, startCheckpointer, type Checkpointer } from "./checkpointer.js";
import type { Database } from "./schema.js";

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
function readOneThrough(db: Executor): ReadOne {
  return async <Row>(query: CompiledQuery) => (await db.executeQuery<Row>(query)).rows[0];
}

function readAllThrough(db: Executor): ReadAll {
  return async <Row>(query: CompiledQuery) => (await db.executeQuery<Row>(query)).rows;
}

/** Drivers answer objects whose members come in select order; the statements never repeat a column name. */
function readArraysThrough(db: Executor): ReadArrays {
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
   * A durable write on the hot path. It resolves only after its changes are committed, but it may share that
   * commit with concurrent writes (group commit on SQLite); a write that throws is rolled back alone. `fn` must
   * do all its database work through `trx`.
   *
   * `lazy`: committed before it resolves (visible, and kept if this process dies), but on SQLite flushed to disk
   * up to LAZY_SYNC_MS later, or with the next durable write, whichever comes first: for the records of reads
   * (the audit log), which must not cost every read an fsync. PostgreSQL commits it like any write.
   */
  write<T>(fn: (trx: Executor, run: RunWrite) => Promise<T>, options?: { lazy?: boolean }): Promise<T>;
  ping(): Promise<void>;
  /** For metrics: connections open and idle, and work waiting for one (queued writes on SQLite). */
  poolStats(): PoolStats;
  close(): Promise<void>;
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

export interface StoreOptions {
  readonly poolSize?: number;
}

export function openStore(config: DatabaseConfig, options: StoreOptions = {}): Store {
  return config.kind === "sqlite"
    ? openSqlite(config.path, config.walLimitBytes)
    : openPostgres(config.url, options.poolSize ?? 10);
}

function openSqlite(file: string, walLimitBytes: number): Store {
  if (file !== ":memory:") createOwnerOnly(file);
  const connection = new SQLite(file);
  // WAL lets readers run beside the writer; synchronous=FULL makes an acknowledged commit survive a power cut,
  // not only a crash of the process — a vault must not lose a token it has already handed out.
  connection.pragma("journal_mode = WAL");
  connection.pragma("synchronous = FULL");
  connection.pragma("foreign_keys = ON");
  connection.pragma("busy_timeout = 5000");
  // A WAL file keeps the size its largest burst gave it: each time this connection starts the log afresh after a
  // complete checkpoint, SQLite cuts the file back to this size. The checkpoint thread truncates it when idle
  // (checkpointer.ts).
  connection.pragma(`journal_size_limit = ${walLimitBytes}`);
  const prepare = statementCache(connection);
  const db = new Kysely<Database>({
    dialect: new SqliteDialect({ database: { prepare, close: () => connection.close() } }),
  });
  const reader = file === ":memory:" ? undefined : openReader(file);
  const checkpointer =
    file === ":memory:" ? undefined : checkpointInBackground(connection, file, walLimitBytes);
  const commits = groupCommit(db, connection, prepare, file === ":memory:" ? undefined : `${file}-wal`);
  return {
    dialect: "sqlite",
    db,
    readOne: reader?.readOne ?? readOneThrough(db),
    readAll: reader?.readAll ?? readAllThrough(db),
    readArrays: reader?.readArrays ?? readArraysThrough(db),
    tokenVersion: () => reader?.tokenVersion(),
    configVersion: () => reader?.configVersion(),
    versions: () => reader?.versions(),
    transaction: (fn) => db.transaction().execute(fn),
    write: commits.write,
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    // One writer and one reader; what waits is the group commit's queue.
    poolStats: () => ({ connections: reader === undefined ? 1 : 2, idle: 0, waiting: commits.queued() }),
    close: async () => {
      await checkpointer?.stop();
      reader?.close();
      await commits.sync();
      await db.destroy();
    },
  };
}

/**
 * The database file holds every token's ciphertext, the wrapped tenant keys and the audit log: only the server's
 * user may read it, and the directory it creates for it is 0700. SQLite creates a database file 0644 (less the
 * umask) and gives the -wal and -shm files it creates later, at any time, the mode of the database file itself;
 * so the file is created here, 0600, before SQLite opens it, and no umask or later chmod is needed for the others.
 * A store an older version created readable by others is narrowed the same way, its -wal and -shm included.
 */
function createOwnerOnly(file: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  // "a" creates a missing file and leaves an existing one as it is; SQLite takes an empty file for a new database.
  closeSync(openSync(file, "a", 0o600));
  for (const each of [file, `${file}-wal`, `${file}-shm`]) restrictToOwner(each);
}

function restrictToOwner(file: string): void {
  let mode: number;
  try {
    mode = statSync(file).mode;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if ((mode & 0o077) === 0) return;
  try {
    chmodSync(file, mode & 0o700);
  } catch (error) {
    throw new ConfigError([
      `${file} is open to other users (mode ${(mode & 0o777).toString(8)}) and this user cannot change that ` +
        `(${(error as Error).message}): make it 0600, owned by the user Tessera runs as`,
    ]);
  }
}

/**
 * Checkpoints leave the commits that serve requests for a thread of their own (checkpointer.ts); if that thread is
 * lost, SQLite's automatic checkpoints come back on the writing connection.
 */
function checkpointInBackground(
  connection: SQLite.Database,
  file: string,
  walLimitBytes: number,
): Checkpointer {
  connection.pragma("wal_autocheckpoint = 0");
  return startCheckpointer({ file, walLimitBytes }, () =>
    connection.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`),
  );
}

/**
 * A second connection for the hot point reads. Kysely serialises every query on the one writing connection, so
 * without it a token lookup would wait behind a whole group commit (and would see its uncommitted writes if it
 * did not). In WAL mode this reader sees the last committed state and never blocks the writer; calling
 * better-sqlite3 directly also spares the lookup Kysely's per-query connection handling.
 */
function openReader(file: string): {
  readOne: ReadOne;
  readAll: ReadAll;
  readArrays: ReadArrays;
  tokenVersion(): number;
  configVersion(): number;
  versions(): StoreVersions;
  close(): void;
} {
  const connection = new SQLite(file);
  connection.pragma("query_only = ON");
  connection.pragma(`cache_size = -${READER_CACHE_KIB}`);
  connection.pragma("busy_timeout = 5000");
  const prepare = statementCache(connection);
  // Raw mode belongs to a statement, so statements read as arrays have a cache of their own.
  const prepareRaw = statementCache(connection, (statement) => statement.raw(true));
  // Prepared on first use: the tables exist only once the store is migrated, after this connection opens. One
  // statement serves both counters: reading one more row in the same read transaction costs next to nothing.
  let versionsStatement: SQLite.Statement | undefined;
  const versions = () =>
    (versionsStatement ??= connection.prepare(
      "select (select value from config_generation where id = 1) as config, " +
        "(select value from token_generation where id = 1) as tokens",
    )).get() as StoreVersions;
  return {
    readOne: async <Row>(query: CompiledQuery) =>
      prepare(query.sql).get(...query.parameters) as Row | undefined,
    readAll: async <Row>(query: CompiledQuery) => prepare(query.sql).all(...query.parameters) as Row[],
    readArrays: async <Row extends readonly unknown[]>(query: CompiledQuery) =>
      prepareRaw(query.sql).all(...query.parameters) as Row[],
    tokenVersion: () => versions().tokens,
    configVersion: () => versions().config,
    versions,
    close: () => connection.close(),
  };
}

const STATEMENT_CACHE_SIZE = 256;
/**
 * SQLite's default page cache is 2 MB; searches and lookups at a million tokens touch far more, and every miss is a
 * read from the OS. 64 MB keeps the upper levels of every index and the hot rows in memory, well inside the
 * 400 MB a server may use.
 */
const READER_CACHE_KIB = 65_536;

/**
 * Kysely prepares every query anew; on SQLite that compilation costs more than running a point lookup. The
 * queries are built from a fixed set of shapes (values are always parameters), so a small cache keyed by SQL
 * text holds them all. Kysely runs one query at a time on this connection, so a statement is never shared.
 */
function statementCache(
  connection: SQLite.Database,
  configure: (statement: SQLite.Statement) => SQLite.Statement = (statement) => statement,
): (text: string) => SQLite.Statement {
  const cache = new Map<string, SQLite.Statement>();
  return (text) => {
    let statement = cache.get(text);
    if (statement === undefined) {
      statement = configure(connection.prepare(text));
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
      cache.set(text, statement);
    }
    return statement;
  };
}

function openPostgres(url: string, poolSize: number): Store {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    // A claim of queued work holds a row lock (FOR UPDATE) for a moment; if the instance holding it dies with its
    // machine, PostgreSQL would only notice the dead connection after TCP's default two hours, and the row would
    // stay skipped. Our transactions are never idle for long, so an idle one is ended after a minute.
    options: "-c idle_in_transaction_session_timeout=60000",
    keepAlive: true,
  });
  // An idle client that loses its server (restart, failover) emits here; without a listener it would crash us.
  pool.on("error", () => undefined);
  // So does a client checked out at that moment (a query or transaction under way), on itself: the pool listens
  // only to idle ones. Its queries fail with the same error, which is where it is handled (a 503, a loop's retry).
  pool.on("connect", (client) => client.on("error", () => undefined));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    dialect: "postgres",
    db,
    ...readsThrough(db),
    transaction: (fn, options) =>
      (options?.snapshot === true
        ? db.transaction().setIsolationLevel("repeatable read")
        : db.transaction()
      ).execute(async (trx) => {
        if (options?.lock !== undefined) {
          await sql`select pg_advisory_xact_lock(hashtext(${options.lock}))`.execute(trx);
        }
        return fn(trx);
      }),
    // PostgreSQL already shares WAL flushes between concurrent commits; one transaction per write is right. READ
    // COMMITTED whatever the server's default: writes rely on each statement seeing what committed before it
    // (deduplication looks after taking its lock; replacements compare and set).
    write: (fn) =>
      db
        .transaction()
        .setIsolationLevel("read committed")
        .execute((trx) => fn(trx, runThrough(trx))),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    poolStats: () => ({ connections: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => db.destroy(),
  };
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface PendingWrite {
  run(trx: Executor, run: RunWrite): Promise<unknown>;
  /** May reach the disk a moment after its commit (Store.write's `lazy`). */
  lazy: boolean;
  resolve(value: unknown): void;
  /** The write's own error (an AppError, a constraint violation) goes back to its caller unchanged. */
  reject(error: unknown): void;
}

const MAX_GROUP = 256;
/** How long a lazy commit may wait for the fsync that makes it survive a power cut. */
export const LAZY_SYNC_MS = 200;

/**
 * Group commit for SQLite. A commit with synchronous=FULL waits for an fsync, and better-sqlite3 waits
 * synchronously, so one transaction per request makes the disk the ceiling. Writes that arrive while a commit
 * is under way are queued and committed together in the next transaction, each inside its own savepoint so
 * that one failing write (a duplicate id, say) is rolled back without touching the others. Every caller is
 * answered only after the COMMIT that holds its write has returned: nothing is acknowledged before it is durable.
 */
function groupCommit(
  db: Kysely<Database>,
  connection: SQLite.Database,
  prepare: (text: string) => SQLite.Statement,
  walFile: string | undefined,
) {
  const queue: PendingWrite[] = [];
  let flushing = false;
  // A group of lazy writes only commits with synchronous=NORMAL: in WAL mode that is durable against a crash of
  // the process but not of the machine, until the WAL is fsynced, which every FULL commit does for all frames
  // before it, and `sync` does within LAZY_SYNC_MS when no FULL commit comes first.
  let synchronous: "FULL" | "NORMAL" = "FULL";
  let owed = false;
  let timer: NodeJS.Timeout | undefined;

  async function sync(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    if (!owed || walFile === undefined) return;
    owed = false;
    const handle = await open(walFile, "r").catch(() => undefined);
    if (handle === undefined) return;
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  // Run on the connection itself, not through Kysely: they run around every write on the hot path, and the
  // transaction below holds Kysely's lock on this one connection, so no other query can come between them.
  const savepoint = connection.prepare("savepoint write");
  const release = connection.prepare("release savepoint write");
  const rollbackTo = connection.prepare("rollback to savepoint write");
  // Inserts on the hot path skip Kysely's per-query machinery the same way.
  const run: RunWrite = async (query) => {
    prepare(query.sql).run(...query.parameters);
  };

  async function flush(): Promise<void> {
    const batch = queue.splice(0, MAX_GROUP);
    const lazy = batch.every((write) => write.lazy);
    try {
      // The connection is reserved first: SQLite refuses to change the safety level inside a transaction, and
      // no other transaction may be open on the connection when it changes.
      const outcomes = await db.connection().execute(async (reserved) => {
        const wanted = lazy ? "NORMAL" : "FULL";
        if (synchronous !== wanted) {
          connection.pragma(`synchronous = ${wanted}`);
          synchronous = wanted;
        }
        return reserved.transaction().execute(async (trx) => {
          const settled: Outcome[] = [];
          for (const write of batch) {
            savepoint.run();
            try {
              settled.push({ ok: true, value: await write.run(trx, run) });
            } catch (error) {
              rollbackTo.run();
              settled.push({ ok: false, error });
            }
            release.run();
          }
          return settled;
        });
      });
      if (!lazy) owed = false;
      else if (!owed) {
        owed = true;
        timer = setTimeout(() => void sync().catch(() => undefined), LAZY_SYNC_MS);
      }
      batch.forEach((write, i) => {
        const outcome = outcomes[i]!;
        if (outcome.ok) write.resolve(outcome.value);
        else write.reject(outcome.error);
      });
    } catch (error) {
      for (const write of batch) write.reject(error);
    }
    if (queue.length > 0) setImmediate(() => void flush());
    else flushing = false;
  }

  return {
    write: <T>(fn: (trx: Executor, run: RunWrite) => Promise<T>, options?: { lazy?: boolean }): Promise<T> =>
      new Promise<T>((resolve, reject) => {
        queue.push({ run: fn, lazy: options?.lazy === true, resolve, reject });
        if (!flushing) {
          flushing = true;
          // A turn of the event loop lets writes that arrived together join the same commit.
          setImmediate(() => void flush());
        }
      }),
    queued: () => queue.length,
    sync,
  };
}

/** True when `error` is a unique or primary-key violation on either engine; callers turn it into a 409. */
export function isUniqueViolation(error: unknown): boolean {
  if (typeof error !== "object" || error === null) return false;
  const code = (error as { code?: unknown }).code;
  return code === "23505" || code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}
