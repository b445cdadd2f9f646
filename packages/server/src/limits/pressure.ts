import { monitorEventLoopDelay } from "node:perf_hooks";
import { getHeapStatistics } from "node:v8";
import type { PressureLimits } from "./settings.js";

/** One reading of the process, taken once per sample interval. */
export interface Reading {
  /** The event loop's mean delay over the interval, in milliseconds. */
  readonly eventLoopDelayMs: number;
  readonly heapUsedBytes: number;
  readonly rssBytes: number;
}

/**
 * How many readings in a row must show a delay past the limit. One slow second is no saturation: start-up work
 * (compiling schemas, migrating) or a moment without CPU on a busy host would otherwise shed healthy traffic.
 */
export const SUSTAINED_READINGS = 3;

/**
 * Turns readings into the reason the process is under pressure, if it is. Memory counts at once (past the heap
 * limit V8 stops the process, whatever the reason); the event loop delay only when it lasts.
 */
export function createPressureGauge(limits: PressureLimits, heapLimitBytes: number) {
  const maxHeapUsed = (heapLimitBytes * limits.maxHeapUsedPercent) / 100;
  let slowReadings = 0;
  let reason: string | undefined;
  return {
    record(reading: Reading): void {
      const slow = limits.maxEventLoopDelayMs > 0 && reading.eventLoopDelayMs > limits.maxEventLoopDelayMs;
      slowReadings = slow ? slowReadings + 1 : 0;
      if (limits.maxHeapUsedPercent > 0 && reading.heapUsedBytes > maxHeapUsed) reason = "heap in use";
      else if (limits.maxRssMiB > 0 && reading.rssBytes > limits.maxRssMiB * 1024 * 1024) {
        reason = "resident memory";
      } else reason = slowReadings >= SUSTAINED_READINGS ? "event loop delay" : undefined;
    },
    /** Why new requests are refused now; undefined while they are welcome. */
    get reason(): string | undefined {
      return reason;
    },
  };
}

export interface PressureMonitor {
  readonly reason: string | undefined;
  stop(): void;
}

const RESOLUTION_MS = 10;

/** Samples this process every `sampleMs` into a gauge; undefined when every limit is off. */
export function monitorPressure(limits: PressureLimits, sampleMs: number): PressureMonitor | undefined {
  if (limits.maxEventLoopDelayMs === 0 && limits.maxHeapUsedPercent === 0 && limits.maxRssMiB === 0) {
    return undefined;
  }
  const gauge = createPressureGauge(limits, getHeapStatistics().heap_size_limit);
  const histogram = monitorEventLoopDelay({ resolution: RESOLUTION_MS });
  histogram.enable();
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    // No tick recorded: the loop was blocked for the whole interval, which is how late this sample is.
    const delay = histogram.count === 0 ? now - last : histogram.mean / 1e6 - RESOLUTION_MS;
    histogram.reset();
    last = now;
    const memory = process.memoryUsage();
    gauge.record({ eventLoopDelayMs: delay, heapUsedBytes: memory.heapUsed, rssBytes: memory.rss });
  }, sampleMs);
  timer.unref();
  return {
    get reason() {
      return gauge.reason;
    },
    stop() {
      clearInterval(timer);
      histogram.disable();
    },
  };
}
