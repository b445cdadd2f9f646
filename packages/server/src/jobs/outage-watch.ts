import type { Logger } from "pino";
import { storeOutage } from "../storage/availability.js";

export interface OutageWatch {
  /**
   * A pass failed. An outage of the store is logged once, when it starts (without a stack trace: nothing is
   * wrong with the code); any other error is logged each time, with its stack.
   */
  failed(err: unknown, message: string): void;
  /** A pass reached the store: if it had been unavailable, that is logged once. */
  succeeded(): void;
}

/**
 * For a background loop that polls the store every second or so: while the database is down every pass fails,
 * and a line per pass would bury the log (issue 16). The loop keeps trying; the log says when the store went
 * away and when it came back.
 */
export function watchOutages(name: string, log: Pick<Logger, "error" | "warn">): OutageWatch {
  let down = false;
  return {
    failed(err, message) {
      const outage = storeOutage(err);
      if (outage === undefined) {
        log.error({ err }, message);
        return;
      }
      if (down) return;
      down = true;
      log.warn(
        { loop: name, outage: outage.reason },
        `${name}: the store is unavailable (${outage.description}); retrying until it is back`,
      );
    },
    succeeded() {
      if (!down) return;
      down = false;
      log.warn({ loop: name }, `${name}: the store is back; resumed`);
    },
  };
}
