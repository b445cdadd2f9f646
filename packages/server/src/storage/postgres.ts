import { Kysely, PostgresDialect, sql, type CompiledQuery } from "kysely";
import pg from "pg";
import { readsThrough, runThrough, type RunWrite, type Store } from "./database.js";
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
  });
  // An idle client that loses its server (restart, failover) emits here; without a listener it would crash us.
  pool.on("error", () => undefined);
  // So does a client checked out at that moment (a query or transaction under way), on itself: the pool listens
  // only to idle ones. Its queries fail with the same error, which is where it is handled (a 503, a loop's retry).
  pool.on("connect", (client) => client.on("error", () => undefined));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const prepared = preparedStatements(pool);
  return {
    dialect: "postgres",
    db,
    ...readsThrough(db),
    readOne: async <Row>(query: CompiledQuery) => (await prepared<Row>(query)).rows[0],
    readAll: async <Row>(query: CompiledQuery) => (await prepared<Row>(query)).rows,
    readArrays: async <Row extends readonly unknown[]>(query: CompiledQuery) =>
      (await prepared<Row>(query, "array")).rows,
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
            .execute((trx) => fn({ db: trx, run: runThrough(trx) })),
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

type Prepared = <Row>(
  query: CompiledQuery,
  rowMode?: "array",
) => Promise<pg.QueryResult<Row & pg.QueryResultRow>>;

/**
 * The hot path's precompiled statements (reads, a write `alone`) as named prepared statements: each connection
 * parses one once and then only binds and executes it, which saves PostgreSQL — on the same cores as the server on
 * a small machine — the parse of every authentication, token read, audit entry and search page, and after five
 * executions its planning too, once PostgreSQL finds a plan made without the values no costlier than those made
 * with them (`plan_cache_mode` auto). For a search page the planning is most of it (docs/performance.md): forcing
 * a plan per execution gave back the whole gain. The plans search keeps are index walks in result order whatever
 * the values (search/plans.test.ts checks them generic). Still one round trip each: node-postgres sends parse (the
 * first time on a connection), bind, execute and sync together.
 * Names are per statement text, so one name never stands for two statements. A statement prepared before a
 * migration changed a table under it (another instance upgraded first) is prepared again under a new name.
 */
function preparedStatements(pool: pg.Pool): Prepared {
  const names = new Map<string, string>();
  let named = 0;
  const nameOf = (text: string, fresh: boolean): string | undefined => {
    const known = names.get(text);
    if (known !== undefined && !fresh) return known;
    if (known === undefined && names.size >= MAX_PREPARED) return undefined;
    const name = `tessera_${++named}`;
    names.set(text, name);
    return name;
  };
  const run = <Row>(query: CompiledQuery, name: string | undefined, rowMode: "array" | undefined) =>
    pool.query<Row & pg.QueryResultRow>({
      text: query.sql,
      values: [...query.parameters],
      ...(name !== undefined && { name }),
      ...(rowMode !== undefined && { rowMode }),
    });
  return async <Row>(query: CompiledQuery, rowMode?: "array") => {
    try {
      return await run<Row>(query, nameOf(query.sql, false), rowMode);
    } catch (error) {
      if (!(error instanceof Error && error.message === STALE_PLAN)) throw error;
      return run<Row>(query, nameOf(query.sql, true), rowMode);
    }
  };
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
