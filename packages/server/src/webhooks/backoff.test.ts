import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { DEFAULT_RETRY_POLICY, nextAttemptDelay } from "./backoff.js";

const HOUR = 3_600_000;

/** Every attempt's time after the first, until the schedule gives up. */
function schedule(random: () => number): number[] {
  const times = [0];
  for (let attempt = 1; ; attempt++) {
    const delay = nextAttemptDelay(attempt, times.at(-1)!, DEFAULT_RETRY_POLICY, random);
    if (delay === undefined) return times;
    times.push(times.at(-1)! + delay);
  }
}

describe("nextAttemptDelay", () => {
  it("doubles from 5 s with equal jitter: half fixed, half random", () => {
    expect(nextAttemptDelay(1, 0, DEFAULT_RETRY_POLICY, () => 0)).toBe(2_500);
    expect(nextAttemptDelay(1, 0, DEFAULT_RETRY_POLICY, () => 1)).toBe(5_000);
    expect(nextAttemptDelay(2, 0, DEFAULT_RETRY_POLICY, () => 0)).toBe(5_000);
    expect(nextAttemptDelay(4, 0, DEFAULT_RETRY_POLICY, () => 1)).toBe(40_000);
    expect(nextAttemptDelay(30, 0, DEFAULT_RETRY_POLICY, () => 1)).toBe(HOUR);
    expect(nextAttemptDelay(30, 0, DEFAULT_RETRY_POLICY, () => 0)).toBe(HOUR / 2);
  });

  it("gives up once the window has passed, and puts the last attempt at its end", () => {
    expect(nextAttemptDelay(3, 24 * HOUR, DEFAULT_RETRY_POLICY)).toBeUndefined();
    expect(nextAttemptDelay(30, 24 * HOUR - 1_000, DEFAULT_RETRY_POLICY, () => 1)).toBe(1_000);
  });

  it("retries for 24 hours whatever the jitter, never two attempts at once, never more than an hour apart", () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), { minLength: 1 }),
        (draws) => {
          let i = 0;
          const times = schedule(() => draws[i++ % draws.length]!);
          expect(times.at(-1)).toBe(24 * HOUR);
          for (let k = 1; k < times.length; k++) {
            const gap = times[k]! - times[k - 1]!;
            expect(gap).toBeGreaterThan(0);
            expect(gap).toBeLessThanOrEqual(HOUR);
          }
          expect(times.length).toBeGreaterThanOrEqual(25);
          expect(times.length).toBeLessThanOrEqual(70);
        },
      ),
    );
  });
});
