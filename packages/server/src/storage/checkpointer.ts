import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** How often the background connection copies the WAL into the database file. */
export const CHECKPOINT_INTERVAL_MS = 50;
/** SQLite's own default, restored on the writing connection if the background thread is lost. */
export const AUTOCHECKPOINT_PAGES = 1000;

/**
 * Plain CommonJS, evaluated as the thread's code: no TypeScript loader or module resolution is needed in the
 * thread, and the driver comes by the path the server itself resolved.
 */
const THREAD = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.file);
db.pragma("busy_timeout = 5000");
// Copying WAL frames that a lazy commit has not yet made durable must not make them durable out of order:
// with synchronous=FULL the checkpoint syncs the WAL before it writes any of it into the database file.
db.pragma("synchronous = FULL");
const checkpoint = db.prepare("pragma wal_checkpoint(PASSIVE)");
let timer;
const tick = () => {
  checkpoint.run();
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

/**
 * WAL checkpoints on a thread of their own. SQLite runs one inside whichever commit takes the WAL past 1,000 pages,
 * on the committing connection, and better-sqlite3 waits for it synchronously: measured here, 15–20 ms each (two
 * fsyncs), every 250 or so single-row commits — about 60 % of all commit time, during which the server answered
 * nothing. A PASSIVE checkpoint on another connection runs beside the writer and the reader without locking
 * either out. `onLost` runs if the thread dies; the caller then turns the automatic checkpoints back on, so that
 * the WAL never grows without bound.
 */
export function startCheckpointer(file: string, onLost: (error: unknown) => void): Checkpointer {
  const driver = createRequire(import.meta.url).resolve("better-sqlite3");
  const worker = new Worker(THREAD, {
    eval: true,
    workerData: { driver, file, intervalMs: CHECKPOINT_INTERVAL_MS },
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
