// `npm run bench -- --soak`: the mixed workload (mix.ts) for a set time on the embedded store (one server) and on
// PostgreSQL (two servers on one database, the connections split between them), with the memory of every process
// read at the end of each interval, and verdicts on whether memory stayed flat and throughput steady.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import SQLite from "better-sqlite3";
import { mib } from "../format.js";
import type { BenchProcess, ServerProcess } from "../server.js";
import { mainIsolate, watchFullGcs, type FullGc } from "./gc.js";
import { MemorySampler, summarizeSamples, type MemorySample, type TimedSample } from "./memory.js";
import { operations, seedStore, SEED_PER_TYPE } from "./mix.js";
import { startSoakCluster, type StoreSize } from "./postgres.js";
import {
  loadTable,
  memoryTable,
  memoryVerdictTable,
  operationTable,
  summarizeOperations,
  throughputLine,
  type OperationSummary,
  type SoakInterval,
} from "./report.js";
import {
  MIN_GCS_PER_THIRD,
  MIN_INTERVALS,
  MEMORY_TOLERANCE_KIB,
  MEMORY_TOLERANCE_SHARE,
  THROUGHPUT_MIN_SHARE,
  liveHeapVerdict,
  memoryVerdict,
  thirdsOf,
  type GcCycles,
  throughputVerdict,
  type MemoryVerdict,
  type ThroughputVerdict,
} from "./verdict.js";
import { runWorkload } from "./workload.js";

export type SoakStore = "sqlite" | "postgres";

export interface SoakSettings {
  readonly minutes: number;
  readonly stores: readonly SoakStore[];
  readonly intervalS: number;
  readonly connections: number;
}

/** What the benchmark's runner lends the soak: its temporary directory and its process bookkeeping. */
export interface SoakHost {
  readonly tempDir: string;
  readonly repoRoot: string;
  /** Starts `tessera serve` with the bench's settings plus `env`; stopped by `stop` or at exit. */
  startTessera(
    name: string,
    dataDir: string,
    managementKey: string,
    env: Readonly<Record<string, string>>,
    nodeFlags: readonly string[],
  ): Promise<ServerProcess>;
  stop(process: BenchProcess): Promise<void>;
  /** Registers a synchronous undo step (run at cleanup or exit); the returned function runs it now, once. */
  onCleanup(step: () => void): () => void;
  progress(message: string): void;
  readonly loadAverage: () => number[];
}

interface StoreUnderTest {
  readonly servers: readonly ServerProcess[];
  readonly managementKey: string;
  readonly postmasterPid?: number;
  size(withCounts: boolean): Promise<StoreSize>;
  /** What the store is, for the header. */
  readonly description: string;
  stop(): Promise<void>;
}

export interface StoreReport {
  readonly store: SoakStore;
  readonly description: string;
  readonly servers: readonly { readonly name: string; readonly pid: number }[];
  readonly loadAverage: { readonly start: readonly number[]; readonly end: readonly number[] };
  readonly seededTokens: number;
  /** Seeding creates answered 400 "took too long" and sent again (mix.ts). */
  readonly seedRetries: number;
  readonly intervals: readonly SoakInterval[];
  /** Every memory reading, SAMPLE_PERIOD_S apart: what the memory verdicts are computed from. */
  readonly samples: readonly TimedSample[];
  readonly operations: readonly OperationSummary[];
  readonly memory: readonly MemoryVerdict[];
  readonly throughput: ThroughputVerdict;
  readonly sizeAtEnd: StoreSize;
  /** Each server's full GCs, from its --trace-gc output. */
  readonly fullGcs: readonly (readonly TimedGc[])[];
  readonly failures: readonly string[];
  /** Judged memory series the run was too short to decide; they do not fail it. */
  readonly inconclusive: readonly string[];
  readonly pass: boolean;
}

export async function runSoak(settings: SoakSettings, host: SoakHost, resultsFile: string): Promise<boolean> {
  const intervals = Math.round((settings.minutes * 60) / settings.intervalS);
  const cpus = os.cpus();
  const header =
    `\nTessera soak: node ${process.version}, ${cpus.length} CPUs (${cpus[0]?.model.trim() ?? "unknown"}), ` +
    `${settings.connections} connections, pipelining 1, ${settings.minutes} min per store in ` +
    `${settings.intervalS} s intervals\n`;
  const reports: StoreReport[] = [];
  // Each store's tables and figures are out as soon as it is done: a long run that fails on the next store
  // keeps them.
  for (const store of settings.stores) {
    const report = await soakStore(store, intervals, settings, host);
    reports.push(report);
    process.stdout.write((reports.length === 1 ? header : "") + printable(report));
    await writeFile(resultsFile, `${JSON.stringify(results(settings, host, reports), null, 2)}\n`);
  }
  process.stdout.write(`\nSeries per interval: ${path.relative(process.cwd(), resultsFile)}\n`);
  return reports.every((report) => report.pass);
}

function results(settings: SoakSettings, host: SoakHost, reports: readonly StoreReport[]) {
  const cpus = os.cpus();
  return {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform} ${os.release()} ${process.arch}`,
    cpus: { count: cpus.length, model: cpus[0]?.model.trim() },
    code: codeVersion(host.repoRoot),
    settings,
    rules: {
      samples: `memory read every ${SAMPLE_PERIOD_S} s; each interval's row shows the medians of its samples`,
      warmup:
        "the first third of the samples (at least as many as each judged third); the other two are judged",
      memory:
        `flat while median(last third) − median(second third) ≤ ${mib(MEMORY_TOLERANCE_KIB)} MiB + ` +
        `${100 * MEMORY_TOLERANCE_SHARE} % of median(second third); a larger growth of a Node process is ` +
        `inconclusive, not a failure, when a judged third held fewer than ${MIN_GCS_PER_THIRD} of its full GCs`,
      liveHeap: "the heap left by each full GC (--trace-gc), medians per judged third, same tolerance",
      throughput: `steady while median(last third) ≥ ${THROUGHPUT_MIN_SHARE} × median(second third)`,
      errors:
        "no 5xx, no connection error or timeout, no wrong answer body; other unexpected statuses are reported",
    },
    stores: reports,
    pass: reports.every((report) => report.pass),
  };
}

async function soakStore(
  kind: SoakStore,
  intervals: number,
  settings: SoakSettings,
  host: SoakHost,
): Promise<StoreReport> {
  const loadAtStart = host.loadAverage();
  host.progress(`soak ${kind}: starting`);
  const store = kind === "sqlite" ? await embeddedStore(host) : await postgresStore(host);
  try {
    const [first] = store.servers;
    if (first === undefined) throw new Error("no server to soak");
    host.progress(`soak ${kind}: seeding ${2 * SEED_PER_TYPE} tokens through ${first.name}`);
    const seeded = await seedStore({ baseUrl: first.baseUrl, managementKey: store.managementKey });
    const mix = operations(seeded);
    const names = mix.map((operation) => operation.name);

    const sampler = new MemorySampler(
      store.servers.map((server) => ({ name: server.name, pid: pidOf(server), baseUrl: server.baseUrl })),
      store.postmasterPid,
      host.loadAverage,
      cpuPressure,
    );
    // A first reading, so that the first sample's CPU shares have a starting point.
    await sampler.sample();
    const series: SoakInterval[] = [];
    host.progress(
      `soak ${kind}: ${intervals} intervals of ${settings.intervalS} s, ${settings.connections} connections` +
        (store.servers.length > 1
          ? `, split between ${store.servers.map((server) => server.name).join(" and ")}`
          : ""),
    );
    const gcs = store.servers.map((server) => watchFullGcs(server.child));
    const loadStartedAt = performance.now();
    const sampling = sampleEvery(sampler, Math.min(SAMPLE_PERIOD_S, settings.intervalS), loadStartedAt);
    let summarized = 0;
    try {
      await runWorkload(mix, {
        urls: store.servers.map((server) => server.baseUrl),
        connections: settings.connections,
        intervalS: settings.intervalS,
        intervals,
        onInterval: async (load, index) => {
          for (const server of store.servers) {
            if (server.child.exitCode !== null || server.child.signalCode !== null) {
              throw new Error(`${server.name} exited during the soak:\n${server.output()}`);
            }
          }
          sampling.check();
          const fresh = sampling.samples.slice(summarized).map(({ sample }) => sample);
          summarized = sampling.samples.length;
          const memory = summarizeSamples(fresh.length > 0 ? fresh : [await sampler.sample()]);
          const { bytes } = await store.size(false);
          series.push({ load, memory, storeBytes: bytes });
          host.progress(`soak ${kind}: ${index + 1}/${intervals} ${progressLine(load, memory)}`);
        },
      });
    } finally {
      await sampling.stop();
    }
    host.progress(`soak ${kind}: counting rows`);
    const sizeAtEnd = await store.size(true);
    const fullGcs = gcs.map((collections) =>
      collections.map((gc) => ({ ...gc, atS: (gc.atMs - loadStartedAt) / 1000 })),
    );
    return judge({
      kind,
      store,
      series,
      samples: sampling.samples,
      fullGcs,
      names,
      loadAverage: { start: loadAtStart, end: host.loadAverage() },
      sizeAtEnd,
      seedRetries: seeded.seedRetries,
    });
  } finally {
    await store.stop();
  }
}

/** Each full GC's line on the server's standard output is what gc.ts reads. */
const NODE_FLAGS = ["--trace-gc"];

/** Memory is read this often, so that each judged third has enough samples for its median to mean something. */
const SAMPLE_PERIOD_S = 5;

interface Sampling {
  readonly samples: readonly TimedSample[];
  /** Throws what made the sampling stop (a server gone), if anything did. */
  check(): void;
  stop(): Promise<void>;
}

/** Samples every `periodS` seconds after `startedAt` (performance.now()), until stopped. */
function sampleEvery(sampler: MemorySampler, periodS: number, startedAt: number): Sampling {
  const samples: TimedSample[] = [];
  let running = true;
  let wake: (() => void) | undefined;
  let failure: unknown;
  const loop = (async () => {
    for (let next = 1; running; next++) {
      const delayMs = Math.max(0, startedAt + next * periodS * 1000 - performance.now());
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delayMs);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (!running) return;
      samples.push({ atS: (performance.now() - startedAt) / 1000, sample: await sampler.sample() });
    }
  })().catch((error: unknown) => {
    failure = error;
  });
  return {
    samples,
    check() {
      if (failure !== undefined) {
        throw failure instanceof Error ? failure : new Error("memory sampling failed", { cause: failure });
      }
    },
    async stop() {
      running = false;
      wake?.();
      await loop;
    },
  };
}

/** A full GC of one server, timed from the start of the load. */
type TimedGc = FullGc & { readonly atS: number };

/** Everything one store's soak saw, for the verdicts. */
interface Observed {
  readonly kind: SoakStore;
  readonly store: StoreUnderTest;
  readonly series: readonly SoakInterval[];
  readonly samples: readonly TimedSample[];
  readonly fullGcs: readonly (readonly TimedGc[])[];
  readonly names: readonly string[];
  readonly loadAverage: StoreReport["loadAverage"];
  readonly sizeAtEnd: StoreSize;
  readonly seedRetries: number;
}

function judge({
  kind,
  store,
  series,
  samples,
  fullGcs,
  names,
  loadAverage,
  sizeAtEnd,
  seedRetries,
}: Observed): StoreReport {
  const times = samples.map(({ atS }) => atS);
  // The judged thirds as times: after the warm-up's last sample, and after the second third's last.
  const { warmup } = thirdsOf(times);
  const size = (times.length - warmup) / 2;
  const middleFrom = times[warmup - 1] ?? 0;
  const lastFrom = times[warmup + size - 1] ?? 0;
  const inMiddle = (gc: TimedGc) => gc.atS > middleFrom && gc.atS <= lastFrom;
  const inLast = (gc: TimedGc) => gc.atS > lastFrom;

  // Every series is judged on the samples that have its figure, with their own times.
  const verdict = (
    name: string,
    judged: boolean,
    pick: (sample: MemorySample) => number | null | undefined,
    cycles?: GcCycles,
  ) => {
    const points = samples.flatMap(({ atS, sample }) => {
      const value = pick(sample);
      return value === null || value === undefined ? [] : [{ atS, value }];
    });
    if (points.length < MIN_INTERVALS) return [];
    return [
      memoryVerdict(
        name,
        judged,
        points.map((point) => point.value),
        points.map((point) => point.atS),
        cycles,
      ),
    ];
  };
  const memory: MemoryVerdict[] = [
    ...store.servers.flatMap((server, index) => {
      const collections = mainIsolate(fullGcs[index] ?? []);
      const middle = collections.filter(inMiddle);
      const last = collections.filter(inLast);
      const cycles = { middle: middle.length, last: last.length };
      return [
        ...verdict(`${server.name}: RSS`, true, (sample) => sample.servers[index]?.rssKiB, cycles),
        liveHeapVerdict(
          `${server.name}: live heap (after each full GC)`,
          middle.map((gc) => gc.afterKiB),
          last.map((gc) => gc.afterKiB),
        ),
        ...verdict(
          `${server.name}: V8 heap used (sampled)`,
          false,
          (sample) => sample.servers[index]?.heapUsedKiB,
          cycles,
        ),
        ...verdict(
          `${server.name}: reactor workers, private (sum)`,
          true,
          (sample) => sample.servers[index]?.workers.privateKiB,
        ),
      ];
    }),
    ...verdict("PostgreSQL processes: Pss (sum)", false, (sample) => sample.postgres?.pssKiB),
    ...verdict("load generator (this process): RSS", false, (sample) => sample.loadGeneratorRssKiB),
  ];
  const throughput = throughputVerdict(series.map(({ load }) => load.reqPerSec));
  const operations = summarizeOperations(series, names, thirdsOf(series.map(({ load }) => load.endS)).warmup);

  const failures: string[] = [];
  const serverErrors = series.reduce((total, { load }) => total + load.serverErrors, 0);
  const connectionErrors = series.reduce((total, { load }) => total + load.connectionErrors, 0);
  const wrongBodies = operations.reduce((total, summary) => total + summary.wrongBodies, 0);
  if (serverErrors > 0) failures.push(`${serverErrors} answers with a 5xx status`);
  if (connectionErrors > 0) failures.push(`${connectionErrors} connection errors or timeouts`);
  if (wrongBodies > 0) failures.push(`${wrongBodies} answers with a wrong body`);
  for (const verdict of memory) {
    if (verdict.judged && verdict.status === "grows") failures.push(`${verdict.series} grows`);
  }
  const inconclusive = memory.filter((verdict) => verdict.judged && verdict.status === "inconclusive");
  return {
    store: kind,
    description: store.description,
    servers: store.servers.map((server) => ({ name: server.name, pid: pidOf(server) })),
    loadAverage,
    seededTokens: 2 * SEED_PER_TYPE,
    seedRetries,
    intervals: series,
    samples,
    operations,
    memory,
    throughput,
    sizeAtEnd,
    fullGcs,
    failures,
    inconclusive: inconclusive.map((verdict) => verdict.series),
    pass: failures.length === 0,
  };
}

function printable(report: StoreReport): string {
  const names = report.operations.map((summary) => summary.name);
  const { sizeAtEnd } = report;
  const counts =
    sizeAtEnd.tokens === null ? "" : `, ${sizeAtEnd.tokens} tokens, ${sizeAtEnd.auditEntries} audit entries`;
  const loads = (values: readonly number[]) => values.map((value) => value.toFixed(2)).join(", ");
  return [
    "",
    `== ${report.description}`,
    `load average (1, 5, 15 min): ${loads(report.loadAverage.start)} at the start, ${loads(report.loadAverage.end)} at the end`,
    "",
    loadTable(report.intervals, names),
    "",
    memoryTable(report.intervals),
    "",
    operationTable(report.operations),
    "",
    memoryVerdictTable(report.memory),
    ...[
      sensitivity(report),
      throughputLine(report.throughput),
      `store at the end: ${(sizeAtEnd.bytes / 1024 / 1024).toFixed(1)} MiB${counts}`,
      ...(report.seedRetries === 0
        ? []
        : [
            `seeding: ${report.seedRetries} creates answered 400 "took too long" (expression time limit) and were sent again`,
          ]),
      ...(report.inconclusive.length === 0
        ? []
        : [`inconclusive, run longer to decide: ${report.inconclusive.join("; ")}`]),
    ].filter((line) => line.length > 0),
    report.pass ? "soak: pass" : `soak: FAIL (${report.failures.join("; ")})`,
    "",
  ].join("\n");
}

/**
 * The slowest steady growth this run calls "grows": the allowance spread over the time between the medians of the
 * two judged thirds (one third of the run). Longer runs catch slower leaks.
 */
function sensitivity(report: StoreReport): string {
  const rss = report.memory.find((verdict) => verdict.judged && verdict.series.endsWith(": RSS"));
  const last = report.samples.at(-1)?.atS;
  if (rss === undefined || last === undefined) return "";
  const thirdH = last / 3 / 3600;
  return (
    `sensitivity: thirds of ${(last / 3).toFixed(0)} s; a steady growth of a ${mib(rss.middleKiB)} MiB process ` +
    `is caught from about ${(rss.allowedKiB / 1024 / thirdH).toFixed(0)} MiB/h`
  );
}

function progressLine(load: SoakInterval["load"], memory: MemorySample): string {
  const servers = memory.servers
    .map(
      (server) =>
        `${server.name} RSS ${mib(server.rssKiB)} MiB, ${server.workers.count} workers ${mib(server.workers.privateKiB)} MiB private`,
    )
    .join("; ");
  const postgres = memory.postgres === null ? "" : `; PostgreSQL ${mib(memory.postgres.pssKiB)} MiB Pss`;
  const errors = load.unexpected + load.connectionErrors;
  return (
    `${load.reqPerSec.toFixed(0)} req/s${errors > 0 ? `, ${load.unexpected} unexpected statuses (${load.serverErrors} 5xx), ${load.connectionErrors} connection errors` : ""}; ` +
    `${servers}${postgres}; load ${(memory.loadAverage[0] ?? 0).toFixed(2)}`
  );
}

async function embeddedStore(host: SoakHost): Promise<StoreUnderTest> {
  const dataDir = path.join(host.tempDir, "soak-sqlite");
  await mkdir(dataDir);
  const managementKey = randomBytes(36).toString("base64url");
  const server = await host.startTessera("Tessera", dataDir, managementKey, {}, NODE_FLAGS);
  const file = path.join(dataDir, "tessera.db");
  return {
    servers: [server],
    managementKey,
    description: "embedded store (SQLite), one server",
    size: (withCounts) => Promise.resolve(sqliteSize(file, withCounts)),
    stop: () => host.stop(server),
  };
}

/** The database file with its write-ahead log and shared-memory index, and, if asked, the rows that grow. */
function sqliteSize(file: string, withCounts: boolean): StoreSize {
  const bytes = ["", "-wal", "-shm"].reduce((total, suffix) => {
    try {
      return total + statSync(file + suffix).size;
    } catch {
      return total;
    }
  }, 0);
  if (!withCounts) return { bytes, tokens: null, auditEntries: null };
  const db = new SQLite(file, { readonly: true });
  try {
    const count = (table: string) =>
      (db.prepare(`select count(*) as n from ${table}`).get() as { n: number }).n;
    return { bytes, tokens: count("tokens"), auditEntries: count("audit_log") };
  } finally {
    db.close();
  }
}

/**
 * Two servers on one fresh cluster, with the same master key and bootstrap key, as instances behind a load
 * balancer would have. The second starts once the first has migrated the database.
 */
async function postgresStore(host: SoakHost): Promise<StoreUnderTest> {
  const cluster = await startSoakCluster();
  const stopCluster = host.onCleanup(cluster.stop);
  const servers: ServerProcess[] = [];
  const stop = async () => {
    await Promise.all(servers.map((server) => host.stop(server)));
    stopCluster();
  };
  try {
    const managementKey = randomBytes(36).toString("base64url");
    const env = {
      TESSERA_DATABASE_URL: cluster.url,
      TESSERA_MASTER_KEY: randomBytes(32).toString("base64"),
    };
    for (const name of ["Tessera A", "Tessera B"]) {
      const dataDir = path.join(host.tempDir, `soak-postgres-${name.slice(-1).toLowerCase()}`);
      await mkdir(dataDir);
      servers.push(await host.startTessera(name, dataDir, managementKey, env, NODE_FLAGS));
    }
    return {
      servers,
      managementKey,
      postmasterPid: cluster.postmasterPid,
      description: "PostgreSQL (default durability settings), two servers on one database",
      size: (withCounts) => cluster.size(withCounts),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function pidOf(server: ServerProcess): number {
  const { pid } = server.child;
  if (pid === undefined) throw new Error(`${server.name} has no process id`);
  return pid;
}

/** /proc/pressure/cpu's `some avg10`, or null where the kernel does not keep it. */
function cpuPressure(): number | null {
  try {
    const text = readFileSync("/proc/pressure/cpu", "utf8");
    const match = /^some avg10=([0-9.]+)/m.exec(text);
    return match === null ? null : Number(match[1]);
  } catch {
    return null;
  }
}

/** Which code was measured: the commit, and the files under packages/ that differed from it. */
function codeVersion(repoRoot: string): { readonly commit: string; readonly changed: readonly string[] } {
  const git = (args: readonly string[]) =>
    execFileSync("git", args, { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  try {
    return {
      commit: git(["rev-parse", "HEAD"]).trim(),
      changed: git(["status", "--porcelain", "--", "packages"])
        .split("\n")
        .filter((line) => line.trim().length > 0),
    };
  } catch {
    return { commit: "unknown", changed: [] };
  }
}
