import { Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { readsThrough, runThrough, type Store } from "./database.js";
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
        .execute((trx) => fn({ db: trx, run: runThrough(trx) })),
    scrubDeleted: () => Promise.resolve(false),
    ping: async () => {
      await sql`select 1`.execute(db);
    },
    poolStats: () => ({ connections: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => db.destroy(),
  };
}
