import type { Logger } from "pino";
import type { ApplicationService } from "./service.js";

/**
 * Deletes expired Applications periodically. Authentication already rejects them the moment they expire,
 * so the sweeper only tidies up; a missed run costs nothing but a row.
 */
export function startExpirySweeper(
  service: Pick<ApplicationService, "sweepExpired">,
  intervalMs: number,
  log: Pick<Logger, "info" | "error">,
): () => Promise<void> {
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = service.sweepExpired().then(
      (deleted) => {
        if (deleted > 0) log.info({ deleted }, "deleted expired applications");
      },
      (err: unknown) => log.error({ err }, "expired-application sweep failed"),
    );
  }, intervalMs);
  timer.unref();
  return async () => {
    clearInterval(timer);
    await running;
  };
}
