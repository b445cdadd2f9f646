// The soak's verdicts. The series are cut in thirds: the first is warm-up (caches filling, the JIT, the reactor
// worker growing into its steady heap) and is not judged; the last third's median is compared with the second
// third's. Medians, not means or single samples, because a garbage collection or a neighbour's burst moves any one
// sample.
import { median } from "../load.js";

/** Memory may grow by this much plus MEMORY_TOLERANCE_SHARE of the second third's median and still be flat. */
export const MEMORY_TOLERANCE_KIB = 4 * 1024;
export const MEMORY_TOLERANCE_SHARE = 0.05;
/** Throughput is steady while the last third's median is at least this share of the second third's. */
export const THROUGHPUT_MIN_SHARE = 0.8;
/** Fewer intervals would leave a third with no sample. */
export const MIN_INTERVALS = 3;

export interface Thirds {
  /** Samples of the warm-up, not judged: whatever the two judged thirds leave, at least as many as either. */
  readonly warmup: number;
  readonly middle: number;
  readonly last: number;
}

export function thirdsOf(values: readonly number[]): Thirds {
  const size = Math.floor(values.length / 3);
  if (size === 0) throw new Error(`a verdict needs at least ${MIN_INTERVALS} samples`);
  const last = values.slice(-size);
  const middle = values.slice(-2 * size, -size);
  return { warmup: values.length - 2 * size, middle: median(middle), last: median(last) };
}

/**
 * flat: within the tolerance. grows: beyond it. inconclusive: beyond it, but a judged third held fewer than two
 * full GCs of the process, so its median may sit on the rising edge of one GC cycle rather than span cycles; or,
 * for the live heap, a third held no full GC at all. Only a run long enough for several cycles per third can tell.
 */
export type MemoryStatus = "flat" | "grows" | "inconclusive";

/** Full GCs of a Node process in each judged third. */
export interface GcCycles {
  readonly middle: number;
  readonly last: number;
}

/** Full GCs per judged third below which a growing median proves nothing. */
export const MIN_GCS_PER_THIRD = 2;

export interface MemoryVerdict {
  readonly series: string;
  /** Judged series decide the run; the others (V8's heap, PostgreSQL, the load generator) are shown. */
  readonly judged: boolean;
  readonly middleKiB: number;
  readonly lastKiB: number;
  readonly growthKiB: number;
  readonly allowedKiB: number;
  /** Least-squares slope over the samples after the warm-up, in MiB per hour: what a long run would add. */
  readonly slopeMiBPerHour: number;
  readonly peakKiB: number;
  readonly status: MemoryStatus;
  /** Why a verdict is inconclusive. */
  readonly note?: string;
}

/** `samplesKiB[i]` was taken at `timesS[i]`. */
/**
 * `samplesKiB[i]` was taken at `timesS[i]`. `cycles`, for a Node process, turns a growth into "inconclusive" when
 * the thirds were too short for its GC cycle.
 */
export function memoryVerdict(
  series: string,
  judged: boolean,
  samplesKiB: readonly number[],
  timesS: readonly number[],
  cycles?: GcCycles,
): MemoryVerdict {
  const thirds = thirdsOf(samplesKiB);
  const allowedKiB = allowance(thirds.middle);
  const growthKiB = thirds.last - thirds.middle;
  const tooFewCycles = cycles !== undefined && Math.min(cycles.middle, cycles.last) < MIN_GCS_PER_THIRD;
  const status: MemoryStatus = growthKiB <= allowedKiB ? "flat" : tooFewCycles ? "inconclusive" : "grows";
  return {
    series,
    judged,
    middleKiB: thirds.middle,
    lastKiB: thirds.last,
    growthKiB,
    allowedKiB,
    slopeMiBPerHour: (slope(timesS.slice(thirds.warmup), samplesKiB.slice(thirds.warmup)) * 3600) / 1024,
    peakKiB: Math.max(...samplesKiB),
    status,
    ...(status === "inconclusive" &&
      cycles !== undefined && {
        note: `${cycles.middle} and ${cycles.last} full GCs in the judged thirds, fewer than ${MIN_GCS_PER_THIRD} each: run longer`,
      }),
  };
}

/**
 * The live heap: what each full GC left, the medians of those in each judged third compared as samples are.
 * Inconclusive when a third saw no full GC.
 */
export function liveHeapVerdict(
  series: string,
  middleKiB: readonly number[],
  lastKiB: readonly number[],
): MemoryVerdict {
  const all = [...middleKiB, ...lastKiB];
  if (middleKiB.length === 0 || lastKiB.length === 0) {
    return {
      series,
      judged: true,
      middleKiB: middleKiB.length === 0 ? Number.NaN : median(middleKiB),
      lastKiB: lastKiB.length === 0 ? Number.NaN : median(lastKiB),
      growthKiB: Number.NaN,
      allowedKiB: Number.NaN,
      slopeMiBPerHour: Number.NaN,
      peakKiB: all.length === 0 ? Number.NaN : Math.max(...all),
      status: "inconclusive",
      note: `${middleKiB.length} and ${lastKiB.length} full GCs in the judged thirds: run longer`,
    };
  }
  const middle = median(middleKiB);
  const last = median(lastKiB);
  const allowedKiB = allowance(middle);
  return {
    series,
    judged: true,
    middleKiB: middle,
    lastKiB: last,
    growthKiB: last - middle,
    allowedKiB,
    slopeMiBPerHour: Number.NaN,
    peakKiB: Math.max(...all),
    status: last - middle <= allowedKiB ? "flat" : "grows",
  };
}

function allowance(middleKiB: number): number {
  return MEMORY_TOLERANCE_KIB + MEMORY_TOLERANCE_SHARE * middleKiB;
}

export interface ThroughputVerdict {
  readonly middleReqPerSec: number;
  readonly lastReqPerSec: number;
  readonly share: number;
  readonly steady: boolean;
}

export function throughputVerdict(reqPerSec: readonly number[]): ThroughputVerdict {
  const thirds = thirdsOf(reqPerSec);
  const share = thirds.last / thirds.middle;
  return {
    middleReqPerSec: thirds.middle,
    lastReqPerSec: thirds.last,
    share,
    steady: share >= THROUGHPUT_MIN_SHARE,
  };
}

/** Least-squares slope of y over x; 0 for fewer than two points. */
function slope(xs: readonly number[], ys: readonly number[]): number {
  const n = Math.min(xs.length, ys.length);
  if (n < 2) return 0;
  const meanX = xs.slice(0, n).reduce((a, b) => a + b, 0) / n;
  const meanY = ys.slice(0, n).reduce((a, b) => a + b, 0) / n;
  let covariance = 0;
  let variance = 0;
  for (let index = 0; index < n; index++) {
    const dx = (xs[index] ?? meanX) - meanX;
    covariance += dx * ((ys[index] ?? meanY) - meanY);
    variance += dx * dx;
  }
  return variance === 0 ? 0 : covariance / variance;
}
