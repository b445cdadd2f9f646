import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { PoolStats } from "../storage/database.js";

/** What the scrape-time gauges read: narrow slices of the vault, so main.ts wires them from what it has. */
export interface MetricsSources {
  readonly reactors: { workers(): { readonly size: number; readonly busy: number } };
  readonly maxWorkers: number;
  /** Asynchronous invocations waiting or running, and webhooks waiting for delivery, across every instance. */
  readonly backlog: () => Promise<{ runs: number; deliveries: number }>;
  readonly database: () => PoolStats;
}

export interface Metrics {
  readonly contentType: string;
  /** The text exposition of every family, gauges read now. */
  render(): Promise<string>;
  /** `route` is the matched route's pattern (`/tokens/:id`), never the URL: ids and search terms stay out. */
  observeRequest(method: string, route: string | undefined, status: number, seconds: number): void;
  /** What became of one reactor invocation, and whether it started a worker (reactors/runtime.ts counts them). */
  observeInvocation(outcome: InvocationOutcome, cold: boolean): void;
}

/** The one label value for requests that matched no route, so that probing random paths adds no series. */
export const UNMATCHED_ROUTE = "unmatched";

/** What became of an invocation: the worker's outcome, or why it never ran. */
const OUTCOMES = ["returned", "threw", "timed-out", "crashed", "pool-exhausted", "start-failed"] as const;
export type InvocationOutcome = (typeof OUTCOMES)[number];

/** From a cached point read to a synchronous reactor at its longest default timeout. */
const HTTP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** A scrape never waits longer than this for the database: a stalled store must not stall monitoring too. */
const BACKLOG_TIMEOUT_MS = 2_000;

/**
 * One registry per server, not prom-client's global one: tests start several servers in one process, and two
 * servers in one registry would refuse to register the same names.
 */
export function createMetrics(sources: MetricsSources): Metrics {
  const registry = new Registry();
  // Process CPU, memory, heap, event-loop lag, GC and handles under their usual names (process_*, nodejs_*).
  collectDefaultMetrics({ register: registry });

  const requests = new Histogram({
    name: "tessera_http_request_duration_seconds",
    help: "HTTP requests by method, route pattern and status; _count is the number of requests.",
    labelNames: ["method", "route", "status"] as const,
    buckets: HTTP_BUCKETS,
    registers: [registry],
  });
  const invocations = new Counter({
    name: "tessera_reactor_invocations_total",
    help: "Reactor invocations by outcome: returned, threw, timed-out, crashed, or not run (pool-exhausted, start-failed).",
    labelNames: ["outcome"] as const,
    registers: [registry],
  });
  const coldStarts = new Counter({
    name: "tessera_reactor_cold_starts_total",
    help: "Reactor invocations that had to load the reactor into a worker first.",
    registers: [registry],
  });
  const pool = () => sources.reactors.workers();
  new Gauge({
    name: "tessera_reactor_workers",
    help: "Reactor worker processes alive or starting, loaded or spare.",
    registers: [registry],
    collect() {
      this.set(pool().size);
    },
  });
  new Gauge({
    name: "tessera_reactor_workers_busy",
    help: "Reactor workers running an invocation or loading a reactor's code for one.",
    registers: [registry],
    collect() {
      this.set(pool().busy);
    },
  });
  new Gauge({
    name: "tessera_reactor_workers_max",
    help: "The most reactor workers this instance runs at once (TESSERA_REACTOR_MAX_WORKERS).",
    registers: [registry],
  }).set(sources.maxWorkers);
  const readBacklog = singleFlight(sources.backlog);
  new Gauge({
    name: "tessera_invocation_backlog",
    help: "Asynchronous invocations waiting or running (queue=runs) and webhooks waiting for delivery (queue=webhooks), shared by every instance.",
    labelNames: ["queue"] as const,
    registers: [registry],
    async collect() {
      const backlog = await within(readBacklog(), BACKLOG_TIMEOUT_MS);
      // Unknown is left out rather than reported as zero, which would read as "nothing waiting".
      this.reset();
      if (backlog === undefined) return;
      this.set({ queue: "runs" }, backlog.runs);
      this.set({ queue: "webhooks" }, backlog.deliveries);
    },
  });
  new Gauge({
    name: "tessera_db_connections",
    help: "Database connections of this instance by state (open, idle); SQLite has one writer and one reader.",
    labelNames: ["state"] as const,
    registers: [registry],
    collect() {
      const stats = sources.database();
      this.set({ state: "open" }, stats.connections);
      this.set({ state: "idle" }, stats.idle);
    },
  });
  new Gauge({
    name: "tessera_db_waiting",
    help: "Queries waiting for a database connection (PostgreSQL) or writes waiting for the next group commit (SQLite).",
    registers: [registry],
    collect() {
      this.set(sources.database().waiting);
    },
  });
  // Every outcome from the first scrape on, so that rate() and alerts have a series before the first event.
  for (const outcome of OUTCOMES) invocations.inc({ outcome }, 0);

  return {
    contentType: registry.contentType,
    render: () => registry.metrics(),
    observeRequest(method, route, status, seconds) {
      requests.observe({ method, route: route ?? UNMATCHED_ROUTE, status: String(status) }, seconds);
    },
    observeInvocation(outcome, cold) {
      invocations.inc({ outcome });
      if (cold) coldStarts.inc();
    },
  };
}

/** Concurrent scrapes share one read, so a slow store never has more than one of them outstanding. */
function singleFlight<T>(read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= read().finally(() => {
      pending = undefined;
    }));
}

/** The value, or undefined when it fails or takes longer than `ms`. */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, ms, undefined);
  });
  try {
    return await Promise.race([promise.catch(() => undefined), late]);
  } finally {
    clearTimeout(timer);
  }
}
