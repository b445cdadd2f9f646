import type { Logger } from "pino";
import { watchOutages } from "./outage-watch.js";

/** What can expire: Applications and tokens, each with its own delete-what-has-expired call. */
export type Sweepers = Readonly<Record<string, () => Promise<number>>>;

/**
 * Deletes expired rows periodically. Reads already treat them as gone the moment they expire, so the sweeper
 * only tidies up; a missed run costs nothing but rows.
 */
export function startExpirySweeper(
  sweepers: Sweepers,
  intervalMs: number,
  log: Pick<Logger, "info" | "warn" | "error">,
): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  // One watch for every sweep: in an outage they all fail together, and one line says so.
  const outages = watchOutages("expiry sweeper", log);
  const timer = setInterval(() => {
    running = Promise.all(
      Object.entries(sweepers).map(([what, sweep]) =>
        sweep().then(
          (deleted) => {
            outages.succeeded();
            if (deleted > 0) log.info({ deleted }, `deleted expired ${what}`);
          },
          (err: unknown) => outages.failed(err, `expired ${what} sweep failed`),
        ),
      ),
    );
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
