import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** How often the background connection copies the WAL into the database file. */
export const CHECKPOINT_INTERVAL_MS = 50;
/** SQLite's own default, restored on the writing connection if the background thread is lost. */
export const AUTOCHECKPOINT_PAGES = 1000;
/** How long no commit must come before a WAL file larger than its limit is truncated. */
export const WAL_TRUNCATE_IDLE_MS = 1_000;
/**
 * The longest a truncating checkpoint waits for a reader to finish or a commit to end; meanwhile it holds new
 * commits back, so it gives up soon and tries again after the next quiet second.
 */
const TRUNCATE_BUSY_MS = 100;

/**
 * Plain CommonJS, evaluated as the thread's code: no TypeScript loader or module resolution is needed in the
 * thread, and the driver comes by the path the server itself resolved.
 */
const THREAD = `
const { statSync } = require("node:fs");
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.file);
// PASSIVE checkpoints never wait; only the truncating one does.
db.pragma("busy_timeout = " + workerData.truncateBusyMs);
// Copying WAL frames that a lazy commit has not yet made durable must not make them durable out of order:
// with synchronous=FULL the checkpoint syncs the WAL before it writes any of it into the database file.
db.pragma("synchronous = FULL");
const checkpoint = db.prepare("pragma wal_checkpoint(PASSIVE)");
const truncate = db.prepare("pragma wal_checkpoint(TRUNCATE)");
const walSize = () => {
  try {
    return statSync(workerData.file + "-wal").size;
  } catch {
    return 0;
  }
};
// Every commit adds frames to the log, so a frame count that stays the same means no commit came.
let frames = -1;
let quietSince = Date.now();
let timer;
const tick = () => {
  const { log, checkpointed } = checkpoint.get();
  const now = Date.now();
  if (log !== frames) {
    frames = log;
    quietSince = now;
  } else if (
    now - quietSince >= workerData.idleMs &&
    checkpointed === log &&
    walSize() > workerData.walLimitBytes
  ) {
    // Everything is in the database file already, so this copies nothing: it waits for readers to leave the
    // log and cuts the file to nothing. Busy, it changes nothing and is tried again after another quiet spell.
    truncate.get();
    quietSince = now;
  }
  timer = setTimeout(tick, workerData.intervalMs);
};
parentPort.once("message", () => {
  clearTimeout(timer);
  db.close();
  parentPort.close();
});
tick();
`;

export interface Checkpointer {
  /** Ends the thread after the checkpoint under way, its connection closed. */
  stop(): Promise<void>;
}

export interface CheckpointerOptions {
  readonly file: string;
  /** The size beyond which the WAL file is truncated once the store is idle (TESSERA_SQLITE_WAL_LIMIT_MB). */
  readonly walLimitBytes: number;
}

/**
 * WAL checkpoints on a thread of their own. SQLite runs one inside whichever commit takes the WAL past 1,000 pages,
 * on the committing connection, and better-sqlite3 waits for it synchronously: measured here, 15–20 ms each (two
 * fsyncs), every 250 or so single-row commits — about 60 % of all commit time, during which the server answered
 * nothing. A PASSIVE checkpoint on another connection runs beside the writer and the reader without locking
 * either out. `onLost` runs if the thread dies; the caller then turns the automatic checkpoints back on, so that
 * the WAL never grows without bound.
 *
 * After a complete checkpoint SQLite writes the log from its start again but keeps the file's size; the writing
 * connection's journal_size_limit cuts the file back at its next commit. A burst that no commit follows (a bulk
 * import that ends) would leave the file as large as the burst made it, so once no commit has come for
 * WAL_TRUNCATE_IDLE_MS and every frame has been copied, a WAL file larger than `walLimitBytes` is truncated (a
 * TRUNCATE checkpoint). Only then: it holds new commits back while it waits for readers to leave the log.
 */
export function startCheckpointer(
  { file, walLimitBytes }: CheckpointerOptions,
  onLost: (error: unknown) => void,
): Checkpointer {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const worker = new Worker(THREAD, {
    eval: true,
    workerData: {
      driver,
      file,
      walLimitBytes,
      intervalMs: CHECKPOINT_INTERVAL_MS,
      idleMs: WAL_TRUNCATE_IDLE_MS,
      truncateBusyMs: TRUNCATE_BUSY_MS,
    },
  });
  let stopping = false;
  let failure: unknown;
  worker.once("error", (error: unknown) => (failure = error));
  const exited = new Promise<void>((resolve) =>
    worker.once("exit", (code) => {
      if (!stopping) onLost(failure ?? new Error(`the checkpoint thread exited with code ${code}`));
      resolve();
    }),
  );
  worker.unref();
  return {
    async stop() {
      stopping = true;
      // Unreferenced, the thread would let a process with nothing else to do exit while this waits for it.
      worker.ref();
      worker.postMessage("stop");
      await exited;
    },
  };
}
