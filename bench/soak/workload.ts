// Runs the mixed workload with autocannon against one or more servers, for a whole number of intervals, and cuts
// what it sees into one bucket per interval: requests, latency percentiles and statuses per operation.
import autocannon from "autocannon";
import { percentileOf } from "../load.js";
import { cycle, type Operation } from "./mix.js";

export interface OperationFigures {
  readonly responses: number;
  readonly reqPerSec: number;
  /** Nearest-rank percentiles of the answers received in the interval, in milliseconds; null when none came. */
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
  /** Every status seen, the expected one included. */
  readonly statusCounts: Readonly<Record<string, number>>;
  /** Answers with the expected status whose content was wrong (a search total, the react's echo). */
  readonly wrongBodies: number;
}

export interface IntervalLoad {
  /** Seconds since the load started, at the end of the interval. */
  readonly endS: number;
  /** The interval's measured length: timers run late on a loaded machine. */
  readonly durationS: number;
  readonly reqPerSec: number;
  /** Requests per second answered by each server, in the order the servers were given. */
  readonly reqPerSecByServer: readonly number[];
  readonly operations: Readonly<Record<string, OperationFigures>>;
  /** Answers whose status was not the operation's expected one. */
  readonly unexpected: number;
  readonly serverErrors: number;
  /** Connection errors and timeouts (autocannon's reqError), which have no status. */
  readonly connectionErrors: number;
  readonly timeouts: number;
}

export interface WorkloadSettings {
  readonly urls: readonly string[];
  /** Split as evenly as possible between the servers. */
  readonly connections: number;
  readonly intervalS: number;
  readonly intervals: number;
  /** Called once per interval, right after its bucket is closed; the memory sampling hangs off it. */
  readonly onInterval: (load: IntervalLoad, index: number) => Promise<void> | void;
}

/** Seconds autocannon may overrun the planned end before it stops on its own: the loop is bounded either way. */
const DURATION_MARGIN_S = 60;
/** autocannon's default is 10 s; a react queued behind a cold worker on a loaded machine may take longer. */
const TIMEOUT_S = 30;

class Bucket {
  readonly latencies: number[][];
  readonly statuses: Record<string, number>[];
  readonly wrongBodies: number[];
  readonly byServer: number[];
  connectionErrors = 0;
  timeouts = 0;

  constructor(operations: number, servers: number) {
    this.latencies = Array.from({ length: operations }, () => []);
    this.statuses = Array.from({ length: operations }, () => ({}));
    this.wrongBodies = new Array<number>(operations).fill(0);
    this.byServer = new Array<number>(servers).fill(0);
  }
}

/**
 * Runs the workload and settles with one IntervalLoad per interval once autocannon has stopped. Every connection
 * sends the same cycle of operations (mix.ts); which operation an answer belongs to is known because autocannon
 * calls the request's `onResponse` and then emits `response` (with the latency) synchronously, back to back.
 */
export async function runWorkload(
  operations: readonly Operation[],
  settings: WorkloadSettings,
): Promise<IntervalLoad[]> {
  const order = cycle(operations.map((operation) => operation.weight));
  let answered: number | undefined;
  let bucket = new Bucket(operations.length, settings.urls.length);

  const requests: autocannon.Request[] = order.map((index) => {
    const operation = operations[index];
    if (operation === undefined) throw new Error("the cycle names an unknown operation");
    return {
      setupRequest: (request) => ({ ...request, ...operation.next() }),
      onResponse: (status, body) => {
        answered = index;
        const statuses = bucket.statuses[index];
        if (statuses !== undefined) statuses[status] = (statuses[status] ?? 0) + 1;
        if (status === operation.expectedStatus && operation.bodyIsRight?.(body) === false) {
          bucket.wrongBodies[index] = (bucket.wrongBodies[index] ?? 0) + 1;
        }
      },
    };
  });

  const instances = settings.urls.map((url, server) => {
    const connections =
      Math.floor(settings.connections / settings.urls.length) +
      (server < settings.connections % settings.urls.length ? 1 : 0);
    if (connections === 0) throw new Error("fewer connections than servers");
    let settle: (error: unknown) => void = () => undefined;
    const done = new Promise<void>((resolve, reject) => {
      settle = (error) => {
        if (error === null || error === undefined) resolve();
        else reject(error instanceof Error ? error : new Error("autocannon failed", { cause: error }));
      };
    });
    const instance = autocannon(
      {
        url,
        connections,
        pipelining: 1,
        timeout: TIMEOUT_S,
        duration: settings.intervals * settings.intervalS + DURATION_MARGIN_S,
        // Each instance keeps its own copy: autocannon rebuilds request buffers in place.
        requests: requests.map((request) => ({ ...request })),
      },
      (error: unknown) => settle(error),
    );
    instance.on("response", (_client, _status, _bytes, responseTimeMs) => {
      if (answered === undefined) return;
      bucket.latencies[answered]?.push(responseTimeMs);
      bucket.byServer[server] = (bucket.byServer[server] ?? 0) + 1;
      answered = undefined;
    });
    instance.on("reqError", (error: unknown) => {
      bucket.connectionErrors++;
      if (error instanceof Error && error.message.includes("timed out")) bucket.timeouts++;
    });
    return { instance, done };
  });

  const loads: IntervalLoad[] = [];
  const started = performance.now();
  let closedAt = started;
  try {
    for (let index = 0; index < settings.intervals; index++) {
      const dueAt = started + (index + 1) * settings.intervalS * 1000;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, dueAt - performance.now())));
      const now = performance.now();
      const closed = bucket;
      bucket = new Bucket(operations.length, settings.urls.length);
      const load = summarize(operations, closed, (now - closedAt) / 1000, (now - started) / 1000);
      closedAt = now;
      loads.push(load);
      await settings.onInterval(load, index);
    }
  } finally {
    for (const { instance } of instances) instance.stop();
    await Promise.all(instances.map(({ done }) => done));
  }
  return loads;
}

function summarize(
  operations: readonly Operation[],
  bucket: Bucket,
  durationS: number,
  endS: number,
): IntervalLoad {
  const figures: Record<string, OperationFigures> = {};
  let responses = 0;
  let unexpected = 0;
  let serverErrors = 0;
  operations.forEach((operation, index) => {
    const latencies = bucket.latencies[index] ?? [];
    const statusCounts = bucket.statuses[index] ?? {};
    for (const [status, count] of Object.entries(statusCounts)) {
      if (Number(status) !== operation.expectedStatus) unexpected += count;
      if (Number(status) >= 500) serverErrors += count;
    }
    responses += latencies.length;
    figures[operation.name] = {
      responses: latencies.length,
      reqPerSec: latencies.length / durationS,
      p50Ms: latencies.length === 0 ? null : percentileOf(latencies, 0.5),
      p99Ms: latencies.length === 0 ? null : percentileOf(latencies, 0.99),
      statusCounts,
      wrongBodies: bucket.wrongBodies[index] ?? 0,
    };
  });
  return {
    endS,
    durationS,
    reqPerSec: responses / durationS,
    reqPerSecByServer: bucket.byServer.map((count) => count / durationS),
    operations: figures,
    unexpected,
    serverErrors,
    connectionErrors: bucket.connectionErrors,
    timeouts: bucket.timeouts,
  };
}
