import {
  Kysely,
  PostgresDialect,
  PostgresDriver,
  sql,
  type CompiledQuery,
  type DatabaseConnection,
  type Dialect,
  type PostgresDialectConfig,
  type PostgresPool,
  type PostgresPoolClient,
  type TransactionSettings,
} from "kysely";
import pg from "pg";
import { readsThrough, type RunWrite, type Store } from "./database.js";
import type { Database } from "./schema.js";

export function openPostgres(url: string, poolSize: number): Store {
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    // A claim of queued work holds a row lock (FOR UPDATE) for a moment; if the instance holding it dies with its
    // machine, PostgreSQL would only notice the dead connection after TCP's default two hours, and the row would
    // stay skipped. Our transactions are never idle for long, so an idle one is ended after a minute.
    options: "-c idle_in_transaction_session_timeout=60000",
    keepAlive: true,
    // Each query is written as soon as it is made rather than after the answer to the one before: a transaction's
    // `begin` travels with its first statement, and statements issued together (a token's index rows) share one
    // round trip. Answers still come in order, and a connection is still held by one request or transaction.
    pipeline: true,
  });
  // An idle client that loses its server (restart, failover) emits here; without a listener it would crash us.
  pool.on("error", () => undefined);
  // So does a client checked out at that moment (a query or transaction under way), on itself: the pool listens
  // only to idle ones. Its queries fail with the same error, which is where it is handled (a 503, a loop's retry).
  pool.on("connect", (client) => client.on("error", () => undefined));
  const names = statementNames();
  const prepared = preparedStatements(pool, names);
  const db = new Kysely<Database>({ dialect: pipelinedDialect({ pool: namingPool(pool, names) }) });
  return {
    dialect: "postgres",
    db,
    ...readsThrough(db),
    readOne: async <Row>(query: CompiledQuery) => (await prepared<Row>(query)).rows[0],
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
    write: (fn, options) =>
      options?.alone === true
        ? fn({ db, run: runAlone(prepared) })
        : db
            .transaction()
            .setIsolationLevel("read committed")
            .execute((trx) => fn({ db: trx, run: runPrepared(trx, names) })),
    scrubDeleted: () => Promise.resolve(false),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    poolStats: () => ({ connections: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => db.destroy(),
  };
}

/** Beyond this many distinct statements, statements run unnamed: a connection keeps every named one it parsed. */
const MAX_PREPARED = 256;

/** SQLSTATE 0A000 with this message: a column was added or dropped under a `select *` a connection had prepared. */
const STALE_PLAN = "cached plan must not change result type";

/**
 * The names of the hot path's precompiled statements (ReadOne, Store.write's `run`), which run as named prepared
 * statements: each connection parses and plans one once and then only binds and executes it, which saves
 * PostgreSQL — on the same cores as the server on a small machine — the parse and plan of every authentication,
 * token read, token write and audit entry. Still one round trip each: node-postgres sends parse (the first time on
 * a connection), bind, execute and sync together. Names are per statement text, so one name never stands for two
 * statements; statements built afresh for each request (searches, listings) stay unnamed.
 */
interface StatementNames {
  /** The statement's name, given on first use; undefined once MAX_PREPARED statements have one. */
  name(text: string): string | undefined;
  /** Only for statements already named. */
  named(text: string): string | undefined;
  /** A statement prepared before a migration changed a table under it is prepared again under a new name. */
  renamed(text: string): string;
}

function statementNames(): StatementNames {
  const names = new Map<string, string>();
  let count = 0;
  const fresh = (text: string) => {
    const name = `tessera_${++count}`;
    names.set(text, name);
    return name;
  };
  return {
    name: (text) => names.get(text) ?? (names.size < MAX_PREPARED ? fresh(text) : undefined),
    named: (text) => names.get(text),
    renamed: fresh,
  };
}

type Prepared = <Row>(query: CompiledQuery) => Promise<pg.QueryResult<Row & pg.QueryResultRow>>;

/** Runs a precompiled statement on a connection of the pool, outside any transaction. */
function preparedStatements(pool: pg.Pool, names: StatementNames): Prepared {
  const run = <Row>(query: CompiledQuery, name: string | undefined) =>
    pool.query<Row & pg.QueryResultRow>({
      text: query.sql,
      values: [...query.parameters],
      ...(name !== undefined && { name }),
    });
  return async <Row>(query: CompiledQuery) => {
    try {
      return await run<Row>(query, names.name(query.sql));
    } catch (error) {
      if (!isStalePlan(error)) throw error;
      return run<Row>(query, names.renamed(query.sql));
    }
  };
}

function isStalePlan(error: unknown): boolean {
  return error instanceof Error && error.message === STALE_PLAN;
}

/** A write's `run` in its transaction: the statement named, then run by Kysely on the transaction's connection. */
function runPrepared(trx: Kysely<Database>, names: StatementNames): RunWrite {
  return async (query) => {
    names.name(query.sql);
    await trx.executeQuery(query);
  };
}

/**
 * The pool as Kysely sees it: its clients run a statement that has a name (StatementNames) as that named prepared
 * statement, and any other as before. One wrapper per client, since Kysely keeps its connections by client.
 */
function namingPool(pool: pg.Pool, names: StatementNames): PostgresPool {
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  // Kysely passes statements as text and values; cursors only with a `cursor` in its configuration, which has none.
  const wrap = (client: pg.PoolClient): PostgresPoolClient => ({
    query: ((text: string, values: readonly unknown[]) => {
      const name = names.named(text);
      if (name === undefined) return client.query(text, [...values]);
      // Inside a transaction a stale plan is not retried: the failed statement has aborted the transaction, whose
      // caller sees the error; the next use prepares it anew under a new name.
      return client.query({ name, text, values: [...values] }).catch((error: unknown) => {
        if (isStalePlan(error)) names.renamed(text);
        throw error;
      });
    }) as unknown as PostgresPoolClient["query"],
    release: () => client.release(),
  });
  return {
    connect: async () => {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (wrapper === undefined) {
        wrapper = wrap(client);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

/**
 * Kysely's PostgreSQL dialect with one change: a transaction's `begin` is written without waiting for its answer,
 * so that it reaches PostgreSQL with the transaction's first statement (the pool's pipeline mode): one round trip
 * fewer per transaction. Its answer is awaited before the commit, which it fails if it failed. `begin` itself
 * fails only with its connection (which then fails every statement after it too), so no statement can run
 * outside the transaction it was meant for and be committed on its own.
 */
function pipelinedDialect(config: PostgresDialectConfig): Dialect {
  const base = new PostgresDialect(config);
  return {
    createDriver: () => new PipelinedDriver(config),
    createQueryCompiler: () => base.createQueryCompiler(),
    createAdapter: () => base.createAdapter(),
    createIntrospector: (db) => base.createIntrospector(db),
  };
}

class PipelinedDriver extends PostgresDriver {
  readonly #begun = new WeakMap<DatabaseConnection, Promise<void>>();

  override beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const begun = super.beginTransaction(connection, settings);
    // Settled here so that a failure is not unhandled meanwhile; commitTransaction reads it.
    begun.catch(() => undefined);
    this.#begun.set(connection, begun);
    return Promise.resolve();
  }

  override async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await this.#begun.get(connection);
    this.#begun.delete(connection);
    await super.commitTransaction(connection);
  }

  override async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    this.#begun.delete(connection);
    await super.rollbackTransaction(connection);
  }
}

/** The `run` of a write `alone`: its one statement, prepared, in a transaction of its own. */
function runAlone(prepared: Prepared): RunWrite {
  let ran = false;
  return async (query) => {
    if (ran) throw new Error("a write alone runs one statement");
    ran = true;
    await prepared(query);
  };
}
