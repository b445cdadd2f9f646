import type { Logger } from "pino";

/** What can expire: Applications and tokens, each with its own delete-what-has-expired call. */
export type Sweepers = Readonly<Record<string, () => Promise<number>>>;

/**
 * Deletes expired rows periodically. Reads already treat them as gone the moment they expire, so the sweeper
 * only tidies up; a missed run costs nothing but rows.
 */
export function startExpirySweeper(
  sweepers: Sweepers,
  intervalMs: number,
  log: Pick<Logger, "info" | "error">,
): () => Promise<void> {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = Promise.all(
      Object.entries(sweepers).map(([what, sweep]) =>
        sweep().then(
          (deleted) => {
            if (deleted > 0) log.info({ deleted }, `deleted expired ${what}`);
          },
          (err: unknown) => log.error({ err }, `expired ${what} sweep failed`),
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
