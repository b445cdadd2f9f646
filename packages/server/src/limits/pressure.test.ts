import { describe, expect, it } from "vitest";
import type { PressureLimits } from "./settings.js";
import { SUSTAINED_READINGS, createPressureGauge, type Reading } from "./pressure.js";

const MiB = 1024 * 1024;
const LIMITS: PressureLimits = { maxEventLoopDelayMs: 100, maxHeapUsedPercent: 50, maxRssMiB: 500 };
const CALM: Reading = { eventLoopDelayMs: 5, heapUsedBytes: 100 * MiB, rssBytes: 300 * MiB };

function gauge(limits = LIMITS) {
  return createPressureGauge(limits, 1_000 * MiB);
}

describe("pressure gauge", () => {
  it("refuses for event loop delay only once it has lasted, and welcomes again after one calm reading", () => {
    const g = gauge();
    g.record(CALM);
    expect(g.reason).toBeUndefined();
    for (let i = 1; i < SUSTAINED_READINGS; i++) {
      g.record({ ...CALM, eventLoopDelayMs: 500 });
      expect(g.reason).toBeUndefined();
    }
    g.record({ ...CALM, eventLoopDelayMs: 500 });
    expect(g.reason).toBe("event loop delay");
    g.record({ ...CALM, eventLoopDelayMs: 101 });
    expect(g.reason).toBe("event loop delay");
    g.record(CALM);
    expect(g.reason).toBeUndefined();
    // A calm reading in between starts the count again.
    for (let i = 1; i < SUSTAINED_READINGS; i++) g.record({ ...CALM, eventLoopDelayMs: 500 });
    g.record(CALM);
    g.record({ ...CALM, eventLoopDelayMs: 500 });
    expect(g.reason).toBeUndefined();
  });

  it("refuses at once past the heap share or the resident memory, and not at the limit itself", () => {
    const g = gauge();
    g.record({ ...CALM, heapUsedBytes: 500 * MiB });
    expect(g.reason).toBeUndefined();
    g.record({ ...CALM, heapUsedBytes: 500 * MiB + 1 });
    expect(g.reason).toBe("heap in use");
    g.record({ ...CALM, rssBytes: 500 * MiB + 1 });
    expect(g.reason).toBe("resident memory");
    g.record(CALM);
    expect(g.reason).toBeUndefined();
  });

  it("checks nothing that is set to 0", () => {
    const g = gauge({ maxEventLoopDelayMs: 0, maxHeapUsedPercent: 0, maxRssMiB: 0 });
    for (let i = 0; i < 2 * SUSTAINED_READINGS; i++) {
      g.record({ eventLoopDelayMs: 60_000, heapUsedBytes: 10_000 * MiB, rssBytes: 10_000 * MiB });
    }
    expect(g.reason).toBeUndefined();
  });
});
