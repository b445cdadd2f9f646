import { chmodSync, closeSync, mkdirSync, openSync, statSync } from "node:fs";
import path from "node:path";
import SQLite from "better-sqlite3";
import { CompiledQuery, Kysely, SqliteDialect, SqliteDriver, sql, type DatabaseConnection } from "kysely";
import { ConfigError } from "../shared/config-error.js";
import { AUTOCHECKPOINT_PAGES, startCheckpointer, type Checkpointer } from "./checkpointer.js";
import {
  readAllThrough,
  readArraysThrough,
  readOneThrough,
  type ReadAll,
  type ReadArrays,
  type Executor,
  type ReadOne,
  type Store,
  type StoreVersions,
} from "./database.js";
import { groupCommit } from "./group-commit.js";
import type { Database } from "./schema.js";

export function openSqlite(file: string, walLimitBytes: number): Store {
  if (file !== ":memory:") createOwnerOnly(file);
  const connection = new SQLite(file);
  // WAL lets readers run beside the writer; synchronous=FULL makes an acknowledged commit survive a power cut,
  // not only a crash of the process — a vault must not lose a token it has already handed out.
  connection.pragma("journal_mode = WAL");
  connection.pragma("synchronous = FULL");
  connection.pragma("foreign_keys = ON");
  connection.pragma("busy_timeout = 5000");
  // Deleted rows are overwritten with zeros, not left in free space: a shredded tenant's wrapped keys must not stay
  // readable in the file (docs/keys.md#shredding-a-tenant). Costs a write of what a delete frees.
  connection.pragma("secure_delete = ON");
  // A WAL file keeps the size its largest burst gave it: each time this connection starts the log afresh after a
  // complete checkpoint, SQLite cuts the file back to this size. The checkpoint thread truncates it when idle
  // (checkpointer.ts).
  connection.pragma(`journal_size_limit = ${walLimitBytes}`);
  const prepare = statementCache(connection);
  const db = new Kysely<Database>({
    dialect: new ImmediateSqliteDialect({ database: { prepare, close: () => connection.close() } }),
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
    transaction: (fn, options) =>
      options?.snapshot === true ? readTransaction(db, fn) : db.transaction().execute(fn),
    write: commits.write,
    scrubDeleted: async () => {
      if (file === ":memory:") return true;
      // A read or a transaction in progress on another connection holds the WAL; it ends within moments.
      for (let attempt = 0; attempt < 100; attempt += 1) {
        await commits.sync();
        try {
          const [result] = connection.pragma("wal_checkpoint(TRUNCATE)") as { busy: number }[];
          if (result?.busy === 0) return true;
        } catch (error) {
          if ((error as { code?: string }).code !== "SQLITE_LOCKED") throw error;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      return false;
    },
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
 * Every transaction takes the write lock at `begin`. A deferred one that reads first and writes after fails at
 * once with SQLITE_BUSY_SNAPSHOT, busy timeout or not, when another process committed in between: the CLI's
 * `init --regenerate-bootstrap-key` beside a running server did, and so could the server's group commit. In this
 * process all writes share one connection, so taking the lock early makes nothing here wait longer. Snapshots
 * only read (readTransaction): they begin deferred, so that they hold back no other process's writes.
 */
class ImmediateSqliteDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw("begin immediate"));
  }
}

/** A deferred transaction: its reads see one committed state, and it never takes the write lock. */
function readTransaction<T>(db: Kysely<Database>, fn: (trx: Executor) => Promise<T>): Promise<T> {
  return db.connection().execute(async (connection) => {
    await sql`begin`.execute(connection);
    try {
      const result = await fn(connection);
      await sql`commit`.execute(connection);
      return result;
    } catch (error) {
      await sql`rollback`.execute(connection);
      throw error;
    }
  });
}

class ImmediateSqliteDialect extends SqliteDialect {
  readonly #config: ConstructorParameters<typeof SqliteDialect>[0];
  constructor(config: ConstructorParameters<typeof SqliteDialect>[0]) {
    super(config);
    this.#config = config;
  }
  override createDriver(): SqliteDriver {
    return new ImmediateSqliteDriver(this.#config);
  }
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
export function statementCache(
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
