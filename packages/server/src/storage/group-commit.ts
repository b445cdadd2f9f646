import { open } from "node:fs/promises";
import type SQLite from "better-sqlite3";
import type { Kysely } from "kysely";
import type { RunWrite, WriteContext } from "./database.js";
import type { Database } from "./schema.js";

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

interface PendingWrite {
  run(write: WriteContext): Promise<unknown>;
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
export function groupCommit(
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
              settled.push({ ok: true, value: await write.run({ db: trx, run }) });
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
    write: <T>(fn: (write: WriteContext) => Promise<T>, options?: { lazy?: boolean }): Promise<T> =>
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
