import type { Logger } from "pino";
import { watchOutages } from "./outage-watch.js";

export interface WorkLoopOptions<Job> {
  /** For log lines. */
  readonly name: string;
  /** How often to look for due work when nothing has woken the loop. */
  readonly pollMs: number;
  /** Jobs of this loop running at once in this process. */
  readonly concurrency: number;
  /** The next due job, claimed for this process, or undefined when none is due. */
  claim(): Promise<Job | undefined>;
  run(job: Job): Promise<void>;
  readonly log: Pick<Logger, "error" | "warn">;
}

export interface WorkLoop {
  /** Look for work now (after enqueueing some), rather than at the next poll. */
  wake(): void;
  /** Stops claiming and resolves once the jobs under way have ended. */
  stop(): Promise<void>;
}

/**
 * Claims and runs due jobs from a durable queue, up to `concurrency` at a time. The queue lives in the database,
 * so the loop holds nothing that a crash could lose: polling finds work enqueued by other instances, and `wake`
 * spares local work the wait.
 */
export function startWorkLoop<Job>(options: WorkLoopOptions<Job>): WorkLoop {
  const running = new Set<Promise<void>>();
  const outages = watchOutages(options.name, options.log);
  let stopping = false;
  let pumping = false;
  let again = false;

  async function pump(): Promise<void> {
    if (pumping) {
      again = true;
      return;
    }
    pumping = true;
    try {
      do {
        again = false;
        while (!stopping && running.size < options.concurrency) {
          const job = await options.claim();
          outages.succeeded();
          // A job claimed as the loop stops still runs: its run gives it back or finishes it, never drops it.
          if (job === undefined) break;
          const run = options
            .run(job)
            .catch((err: unknown) => outages.failed(err, `${options.name} job failed`))
            .finally(() => {
              running.delete(run);
              if (!stopping) void pump();
            });
          running.add(run);
        }
      } while (again && !stopping);
    } catch (err) {
      // The store is unreachable or busy: the next poll tries again.
      outages.failed(err, `${options.name}: claiming work failed`);
    } finally {
      pumping = false;
    }
  }

  const timer = setInterval(() => void pump(), options.pollMs);
  timer.unref();
  void pump();

  return {
    wake: () => void pump(),
    async stop() {
      stopping = true;
      clearInterval(timer);
      while (running.size > 0) await Promise.allSettled([...running]);
    },
  };
}
