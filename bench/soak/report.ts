// The soak's tables for the terminal: load per interval, memory per interval, a summary per operation, verdicts.
import { formatTable, mib } from "../format.js";
import { median } from "../load.js";
import type { MemorySample } from "./memory.js";
import type { OperationName } from "./mix.js";
import {
  THROUGHPUT_MIN_SHARE,
  type MemoryStatus,
  type MemoryVerdict,
  type ThroughputVerdict,
} from "./verdict.js";
import type { IntervalLoad } from "./workload.js";

export interface SoakInterval {
  readonly load: IntervalLoad;
  /** Medians of the memory samples taken during the interval (CPU: their mean). */
  readonly memory: MemorySample;
  /** The store's size on disk at the end of the interval. */
  readonly storeBytes: number;
}

const SHORT_NAMES: Readonly<Record<OperationName, string>> = {
  "GET /tokens/{id}": "GET token",
  "POST /tokens": "create",
  "search: data": "search data",
  "search: metadata": "search meta",
  "react (2 tokens)": "react",
};

function shortName(name: string): string {
  return SHORT_NAMES[name as OperationName] ?? name;
}

function fixed(value: number | null, digits: number): string {
  return value === null || !Number.isFinite(value) ? "—" : value.toFixed(digits);
}

/** Per interval: total req/s (per server when there are several), and per operation "req/s p50/p99". */
export function loadTable(intervals: readonly SoakInterval[], operationNames: readonly string[]): string {
  const several = (intervals[0]?.load.reqPerSecByServer.length ?? 1) > 1;
  const head = [
    "t s",
    several ? "req/s (per server)" : "req/s",
    ...operationNames.map((name) => `${shortName(name)}: req/s p50/p99 ms`),
    "non-2xx (5xx)",
    "conn err",
    "load 1 min",
  ];
  const rows = intervals.map(({ load, memory }) => [
    load.endS.toFixed(0),
    load.reqPerSec.toFixed(0) +
      (several ? ` (${load.reqPerSecByServer.map((value) => value.toFixed(0)).join(" + ")})` : ""),
    ...operationNames.map((name) => {
      const figures = load.operations[name];
      if (figures === undefined) return "—";
      return `${figures.reqPerSec.toFixed(0)} ${fixed(figures.p50Ms, 1)}/${fixed(figures.p99Ms, 1)}`;
    }),
    `${load.unexpected} (${load.serverErrors})`,
    String(load.connectionErrors),
    fixed(memory.loadAverage[0] ?? null, 2),
  ]);
  return formatTable(head, rows);
}

/** Per interval: each server's RSS, V8 heap and CPU, its workers, PostgreSQL's processes, the load generator. */
export function memoryTable(intervals: readonly SoakInterval[]): string {
  const first = intervals[0]?.memory;
  if (first === undefined) return "";
  const head = [
    "t s",
    ...first.servers.flatMap((server) => [
      `${server.name}: RSS MiB (heap)`,
      `CPU %`,
      `workers: n, private MiB (RSS)`,
      `CPU %`,
    ]),
    ...(first.postgres === null ? [] : ["PostgreSQL: n, Pss MiB (private)", "CPU %"]),
    "load generator RSS MiB",
    "store MiB",
  ];
  const rows = intervals.map(({ load, memory, storeBytes }) => [
    load.endS.toFixed(0),
    ...memory.servers.flatMap((server) => [
      `${mib(server.rssKiB)} (${server.heapUsedKiB === null ? "—" : mib(server.heapUsedKiB)})`,
      fixed(server.cpuPct, 0),
      `${server.workers.count}, ${mib(server.workers.privateKiB)} (${mib(server.workers.rssKiB)})`,
      fixed(server.workers.cpuPct, 0),
    ]),
    ...(memory.postgres === null
      ? []
      : [
          `${memory.postgres.count}, ${mib(memory.postgres.pssKiB)} (${mib(memory.postgres.privateKiB)})`,
          fixed(memory.postgres.cpuPct, 0),
        ]),
    mib(memory.loadGeneratorRssKiB),
    (storeBytes / 1024 / 1024).toFixed(1),
  ]);
  return formatTable(head, rows);
}

export interface OperationSummary {
  readonly name: string;
  readonly responses: number;
  /** Medians over the intervals after the warm-up. */
  readonly reqPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The worst interval's p99 after the warm-up. */
  readonly maxP99Ms: number;
  readonly statusCounts: Readonly<Record<string, number>>;
  readonly wrongBodies: number;
}

/** Responses and statuses over the whole run; rates and latencies as medians over the intervals after warm-up. */
export function summarizeOperations(
  intervals: readonly SoakInterval[],
  operationNames: readonly string[],
  warmup: number,
): OperationSummary[] {
  const judged = intervals.slice(warmup);
  return operationNames.map((name) => {
    const all = intervals.flatMap(({ load }) => load.operations[name] ?? []);
    const after = judged.flatMap(({ load }) => load.operations[name] ?? []);
    const statusCounts: Record<string, number> = {};
    for (const figures of all) {
      for (const [status, count] of Object.entries(figures.statusCounts)) {
        statusCounts[status] = (statusCounts[status] ?? 0) + count;
      }
    }
    const present = (values: readonly (number | null)[]) => values.flatMap((value) => value ?? []);
    const p99s = present(after.map((figures) => figures.p99Ms));
    return {
      name,
      responses: all.reduce((total, figures) => total + figures.responses, 0),
      reqPerSec: median(after.map((figures) => figures.reqPerSec)),
      p50Ms: median(present(after.map((figures) => figures.p50Ms))),
      p99Ms: median(p99s),
      maxP99Ms: Math.max(...p99s),
      statusCounts,
      wrongBodies: all.reduce((total, figures) => total + figures.wrongBodies, 0),
    };
  });
}

export function operationTable(summaries: readonly OperationSummary[]): string {
  return formatTable(
    ["operation", "answers", "req/s", "p50 ms", "p99 ms", "worst p99 ms", "statuses", "wrong bodies"],
    summaries.map((summary) => [
      summary.name,
      String(summary.responses),
      summary.reqPerSec.toFixed(0),
      summary.p50Ms.toFixed(2),
      summary.p99Ms.toFixed(2),
      summary.maxP99Ms.toFixed(2),
      Object.entries(summary.statusCounts)
        .map(([status, count]) => `${status}: ${count}`)
        .join(", "),
      String(summary.wrongBodies),
    ]),
  );
}

const STATUS_TEXT: Readonly<Record<MemoryStatus, string>> = {
  flat: "flat",
  grows: "GROWS",
  inconclusive: "inconclusive",
};

export function memoryVerdictTable(memory: readonly MemoryVerdict[]): string {
  const known = (value: number, text: (value: number) => string) =>
    Number.isFinite(value) ? text(value) : "—";
  const rows = memory.map((verdict) => [
    verdict.series,
    known(verdict.middleKiB, mib),
    known(verdict.lastKiB, mib),
    known(verdict.growthKiB, (kib) => signed(kib / 1024)),
    known(verdict.allowedKiB, (kib) => `≤ ${mib(kib)}`),
    known(verdict.slopeMiBPerHour, signed),
    known(verdict.peakKiB, mib),
    (verdict.judged ? STATUS_TEXT[verdict.status] : `(shown) ${verdict.status}`) +
      (verdict.note === undefined ? "" : ` (${verdict.note})`),
  ]);
  return formatTable(
    [
      "series",
      "2nd third, median MiB",
      "last third, median MiB",
      "growth MiB",
      "allowed MiB",
      "slope MiB/h",
      "peak MiB",
      "verdict",
    ],
    rows,
  );
}

function signed(value: number): string {
  return `${value >= 0 ? "+" : "−"}${Math.abs(value).toFixed(1)}`;
}

export function throughputLine(verdict: ThroughputVerdict): string {
  return (
    `throughput, all operations: ${verdict.middleReqPerSec.toFixed(0)} req/s (second third, median) → ` +
    `${verdict.lastReqPerSec.toFixed(0)} req/s (last third): ${signed(100 * (verdict.share - 1))} % ` +
    `(steady while ≥ ${signed(100 * (THROUGHPUT_MIN_SHARE - 1))} %): ${verdict.steady ? "steady" : "NOT STEADY"}`
  );
}
