import type { Logger } from "pino";
import { AppError } from "../server/errors.js";
import { storeOutage } from "../storage/availability.js";

export interface OutageWatch {
  /**
   * A pass failed. An outage of the store, or of the master key's HSM or KMS, is logged once, when it starts
   * (without a stack trace: nothing is wrong with the code); any other error is logged each time, with its stack.
   */
  failed(err: unknown, message: string): void;
  /** A pass went through: if the store or the master key had been unavailable, that is logged once. */
  succeeded(): void;
}

/**
 * For a background loop that polls the store every second or so: while the database is down every pass fails,
 * and a line per pass would bury the log (issue 16). The loop keeps trying; the log says when the store went
 * away and when it came back. The same holds for the master key's provider, whose custody layer has logged why
 * (keys/providers/custody.ts).
 */
export function watchOutages(name: string, log: Pick<Logger, "error" | "warn">): OutageWatch {
  let down: "store" | "master key" | undefined;
  return {
    failed(err, message) {
      const outage = storeOutage(err);
      const masterKey = err instanceof AppError && err.code === "master-key-unavailable";
      if (outage === undefined && !masterKey) {
        log.error({ err }, message);
        return;
      }
      if (down !== undefined) return;
      if (outage !== undefined) {
        down = "store";
        log.warn(
          { loop: name, outage: outage.reason },
          `${name}: the store is unavailable (${outage.description}); retrying until it is back`,
        );
      } else {
        down = "master key";
        log.warn(
          { loop: name, outage: "master-key" },
          `${name}: the master key is unavailable; retrying until it is back`,
        );
      }
    },
    succeeded() {
      if (down === undefined) return;
      log.warn({ loop: name }, `${name}: the ${down} is back; resumed`);
      down = undefined;
    },
  };
}
