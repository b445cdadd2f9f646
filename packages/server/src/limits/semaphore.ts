export interface SemaphoreOptions {
  /** Holders at once (at least 1). */
  readonly limit: number;
  /** Callers that may wait for a slot; beyond them `acquire` refuses at once. */
  readonly queue: number;
  /** How long a caller waits in the queue before it is refused. */
  readonly timeoutMs: number;
}

/** Gives the slot back; calling it again does nothing. */
export type Release = () => void;

export type Acquired =
  | { readonly acquired: true; readonly release: Release }
  | { readonly acquired: false; readonly reason: "queue-full" | "timed-out" | "aborted" };

export interface Semaphore {
  /**
   * A slot now, or after waiting in the queue; the signal that `gone` makes ends the wait (the client went away).
   * It is made only for a caller that has to wait: most find a slot free, and a signal costs its listeners.
   */
  acquire(gone?: () => AbortSignal): Promise<Acquired>;
  readonly active: number;
  readonly waiting: number;
}

interface Waiter {
  grant(): void;
}

/** A counting semaphore with a short, bounded, first-come-first-served queue whose waits time out. */
export function createSemaphore(options: SemaphoreOptions): Semaphore {
  let active = 0;
  const queue: Waiter[] = [];

  const releaser = (): Release => {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = queue.shift();
      // The slot passes straight to the next waiter, so a newcomer never overtakes the queue.
      if (next === undefined) active--;
      else next.grant();
    };
  };

  return {
    acquire(gone) {
      if (active < options.limit) {
        active++;
        return Promise.resolve({ acquired: true, release: releaser() });
      }
      if (queue.length >= options.queue) return Promise.resolve({ acquired: false, reason: "queue-full" });
      const signal = gone?.();
      if (signal?.aborted === true) return Promise.resolve({ acquired: false, reason: "aborted" });
      return new Promise<Acquired>((resolve) => {
        const leave = (reason: "timed-out" | "aborted") => {
          queue.splice(queue.indexOf(waiter), 1);
          settle();
          resolve({ acquired: false, reason });
        };
        const timer = setTimeout(() => leave("timed-out"), options.timeoutMs);
        const onAbort = () => leave("aborted");
        const settle = () => {
          clearTimeout(timer);
          signal?.removeEventListener("abort", onAbort);
        };
        const waiter: Waiter = {
          grant: () => {
            settle();
            resolve({ acquired: true, release: releaser() });
          },
        };
        queue.push(waiter);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    },
    get active() {
      return active;
    },
    get waiting() {
      return queue.length;
    },
  };
}
