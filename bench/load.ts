// Driving autocannon and reducing its result to the figures the report needs.
import autocannon from "autocannon";
import type { LoadRequest } from "./scenarios.js";

export interface LoadSettings {
  readonly connections: number;
  readonly pipelining: number;
  readonly durationS: number;
}

export interface RoundFigures {
  /** Mean of autocannon's per-second samples: the "Req/Sec Avg" its own CLI prints. */
  readonly reqPerSec: number;
  /** Nearest-rank percentiles of every response's latency, in fractional milliseconds. */
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly responses: number;
  readonly durationS: number;
  readonly non2xx: number;
  readonly errors: number;
  readonly timeouts: number;
  readonly statusCounts: Readonly<Record<string, number>>;
}

export function runLoad(url: string, request: LoadRequest, settings: LoadSettings): Promise<RoundFigures> {
  return runLoadSpread([url], request, settings);
}

/**
 * The load spread over several servers (instances behind a load balancer): `settings.connections` split evenly
 * between `urls`, all driven at once; the figures are of every answer together (throughputs add up, percentiles are
 * of all latencies).
 */
export async function runLoadSpread(
  urls: readonly string[],
  request: LoadRequest,
  settings: LoadSettings,
): Promise<RoundFigures> {
  if (urls.length === 0 || settings.connections < urls.length) {
    throw new Error("every server needs at least one connection");
  }
  const latencies: number[] = [];
  const results = await Promise.all(
    urls.map((url, index) =>
      drive(
        url,
        request,
        {
          ...settings,
          connections:
            Math.floor(settings.connections / urls.length) +
            (index < settings.connections % urls.length ? 1 : 0),
        },
        latencies,
      ),
    ),
  );
  return reduce(results, latencies);
}

function drive(
  url: string,
  request: LoadRequest,
  settings: LoadSettings,
  latencies: number[],
): Promise<autocannon.Result> {
  // autocannon's own latency histogram counts whole milliseconds, too coarse when answers take less than one, so
  // latencies come from its per-response event, which carries the hrtime measurement.
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        method: request.method,
        headers: { ...request.headers },
        ...(request.body === undefined ? {} : { body: request.body }),
        // Each connection sends these in order, over and over.
        ...(request.headersInTurn !== undefined && {
          requests: request.headersInTurn.map((headers) => ({
            method: request.method,
            headers: { ...headers },
            ...(request.body !== undefined && { body: request.body }),
          })),
        }),
        connections: settings.connections,
        pipelining: settings.pipelining,
        duration: settings.durationS,
      },
      (error: unknown, result: autocannon.Result) => {
        if (error === null || error === undefined) resolve(result);
        else reject(error instanceof Error ? error : new Error("autocannon failed", { cause: error }));
      },
    );
    instance.on("response", (_client, _status, _bytes, responseTimeMs) => latencies.push(responseTimeMs));
  });
}

function reduce(results: readonly autocannon.Result[], latencies: readonly number[]): RoundFigures {
  const statusCounts: Record<string, number> = {};
  for (const result of results) {
    for (const [status, stats] of Object.entries(result.statusCodeStats ?? {})) {
      statusCounts[status] = (statusCounts[status] ?? 0) + (stats.count ?? 0);
    }
  }
  const sum = (figure: (result: autocannon.Result) => number) =>
    results.reduce((total, result) => total + figure(result), 0);
  const sorted = Float64Array.from(latencies).sort();
  return {
    reqPerSec: sum((result) => result.requests.average),
    p50Ms: percentile(sorted, 0.5),
    p99Ms: percentile(sorted, 0.99),
    responses: sum((result) => result.requests.total),
    durationS: Math.max(...results.map((result) => result.duration)),
    non2xx: sum((result) => result.non2xx),
    errors: sum((result) => result.errors),
    timeouts: sum((result) => result.timeouts),
    statusCounts,
  };
}

/** Nearest-rank percentile of values in any order; NaN when there are none. */
export function percentileOf(values: readonly number[], fraction: number): number {
  return percentile(Float64Array.from(values).sort(), fraction);
}

/** Nearest-rank percentile of ascending values; NaN when there are none, which `roundProblems` reports. */
function percentile(sorted: Float64Array, fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;
}

/** Why a round's figures cannot be trusted, or an empty list if they can. */
export function roundProblems(figures: RoundFigures, expectedStatus: number): string[] {
  const problems: string[] = [];
  if (figures.responses === 0) problems.push("no responses");
  const unexpected = Object.entries(figures.statusCounts)
    .filter(([status, count]) => Number(status) !== expectedStatus && count > 0)
    .map(([status, count]) => `${count} × HTTP ${status}`);
  if (unexpected.length > 0) {
    problems.push(`unexpected answers: ${unexpected.join(", ")} (${figures.non2xx} non-2xx)`);
  } else if (figures.non2xx > 0) {
    // autocannon's per-status breakdown is optional; its non-2xx count is not.
    problems.push(`${figures.non2xx} non-2xx responses`);
  }
  if (figures.errors > 0) problems.push(`${figures.errors} connection errors (${figures.timeouts} timeouts)`);
  return problems;
}

export interface MedianFigures {
  readonly reqPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
}

/** One side of a scenario: its rounds, their medians and whatever was wrong with its answers. */
export interface Measured {
  readonly rounds: RoundFigures[];
  readonly median: MedianFigures;
  readonly problems: string[];
}

/** Medians per figure rather than the figures of a median round: the machine is shared and rounds are noisy. */
export function medians(rounds: readonly RoundFigures[]): MedianFigures {
  return {
    reqPerSec: median(rounds.map((r) => r.reqPerSec)),
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: median(rounds.map((r) => r.p99Ms)),
  };
}

/** The middle value, or the mean of the two middle ones. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  const upper = sorted[middle];
  if (upper === undefined) throw new Error("median of no values");
  if (sorted.length % 2 === 1) return upper;
  return ((sorted[middle - 1] ?? upper) + upper) / 2;
}
