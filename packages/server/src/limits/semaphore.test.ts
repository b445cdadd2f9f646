import { setImmediate as nextTurn } from "node:timers/promises";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createSemaphore, type Acquired, type Release } from "./semaphore.js";

const TIMEOUT_MS = 1_000;

const ops = fc.array(
  fc.oneof(
    fc.record({ kind: fc.constant("acquire" as const), abortable: fc.boolean() }),
    fc.record({ kind: fc.constant("release" as const), index: fc.nat() }),
    fc.record({ kind: fc.constant("abort" as const), index: fc.nat() }),
    fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 0, max: 2 * TIMEOUT_MS }) }),
  ),
  { maxLength: 80 },
);

interface Pending {
  readonly order: number;
  readonly controller: AbortController;
  outcome?: Acquired;
}

describe("semaphore", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("never exceeds its limit or queue, loses no slot, and grants waiters in arrival order", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 4 }),
        ops,
        async (limit, queue, steps) => {
          const semaphore = createSemaphore({ limit, queue, timeoutMs: TIMEOUT_MS });
          const held: Release[] = [];
          const waiting: Pending[] = [];
          const granted: number[] = [];
          let arrivals = 0;
          for (const op of steps) {
            if (op.kind === "acquire") {
              const pending: Pending = { order: arrivals++, controller: new AbortController() };
              waiting.push(pending);
              void semaphore
                .acquire(op.abortable ? () => pending.controller.signal : undefined)
                .then((outcome) => (pending.outcome = outcome));
            } else if (op.kind === "release" && held.length > 0) {
              const [release] = held.splice(op.index % held.length, 1);
              release!();
              release!(); // a second call gives nothing back
            } else if (op.kind === "abort" && waiting.length > 0) {
              waiting[op.index % waiting.length]!.controller.abort();
            } else if (op.kind === "tick") {
              vi.advanceTimersByTime(op.ms);
            }
            await nextTurn();
            for (const pending of waiting.filter((p) => p.outcome !== undefined)) {
              waiting.splice(waiting.indexOf(pending), 1);
              if (pending.outcome!.acquired) {
                held.push(pending.outcome!.release);
                granted.push(pending.order);
              }
            }
            expect(semaphore.active).toBe(held.length);
            expect(semaphore.active).toBeLessThanOrEqual(limit);
            expect(semaphore.waiting).toBe(waiting.length);
            expect(semaphore.waiting).toBeLessThanOrEqual(queue);
            // A free slot with someone waiting would be a lost wake-up.
            if (semaphore.waiting > 0) expect(semaphore.active).toBe(limit);
          }
          expect(granted).toEqual([...granted].sort((a, b) => a - b));
        },
      ),
    );
  });

  it("refuses beyond the queue at once, and a wait that times out or is aborted", async () => {
    const semaphore = createSemaphore({ limit: 1, queue: 2, timeoutMs: TIMEOUT_MS });
    const first = await semaphore.acquire();
    expect(first.acquired).toBe(true);
    const timesOut = semaphore.acquire();
    const controller = new AbortController();
    const aborted = semaphore.acquire(() => controller.signal);
    await expect(semaphore.acquire()).resolves.toEqual({ acquired: false, reason: "queue-full" });
    controller.abort();
    await expect(aborted).resolves.toEqual({ acquired: false, reason: "aborted" });
    vi.advanceTimersByTime(TIMEOUT_MS);
    await expect(timesOut).resolves.toEqual({ acquired: false, reason: "timed-out" });
    expect(semaphore.waiting).toBe(0);
    await expect(semaphore.acquire(() => AbortSignal.abort())).resolves.toEqual({
      acquired: false,
      reason: "aborted",
    });
  });

  it("hands a released slot to the first waiter", async () => {
    const semaphore = createSemaphore({ limit: 1, queue: 1, timeoutMs: TIMEOUT_MS });
    const first = await semaphore.acquire();
    const second = semaphore.acquire();
    if (!first.acquired) throw new Error("first acquire refused");
    first.release();
    await expect(second).resolves.toMatchObject({ acquired: true });
    expect(semaphore.active).toBe(1);
    vi.advanceTimersByTime(2 * TIMEOUT_MS);
    await expect(second).resolves.toMatchObject({ acquired: true });
  });
});
