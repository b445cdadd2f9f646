// Memory and CPU of every process of a soak, read from /proc at the end of each interval: each Tessera server
// (and its V8 heap, from its own /metrics), its Deno reactor workers, PostgreSQL's processes, and this process,
// which generates the load.
import { readdirSync } from "node:fs";
import { median } from "../load.js";
import { descendantsNamed, processMemory, processStat } from "../proc.js";
import { httpRequest } from "../server.js";

/** The kernel's name for a reactor worker (the `deno` npm package's binary). */
const WORKER_COMM = "deno";
/** /proc counts CPU time in USER_HZ ticks, 100 a second for user space on Linux. */
const MS_PER_TICK = 10;

export interface ServerMemory {
  readonly name: string;
  readonly pid: number;
  readonly rssKiB: number;
  readonly privateKiB: number;
  /** V8's used heap and memory outside it (Buffers), from the server's /metrics; null if it did not answer. */
  readonly heapUsedKiB: number | null;
  readonly externalKiB: number | null;
  /** Share of one core used since the previous sample. */
  readonly cpuPct: number | null;
  readonly workers: WorkerGroup;
}

export interface WorkerGroup {
  readonly count: number;
  readonly rssKiB: number;
  /** What the workers cost beyond the shared Deno binary: the figure that grows if a worker leaks. */
  readonly privateKiB: number;
  readonly cpuPct: number | null;
  readonly each: readonly { readonly pid: number; readonly rssKiB: number; readonly privateKiB: number }[];
}

export interface PostgresMemory {
  readonly count: number;
  /** Proportional set, summed: the group's real footprint, each shared page (shared_buffers) counted once. */
  readonly pssKiB: number;
  readonly rssKiB: number;
  readonly privateKiB: number;
  readonly cpuPct: number | null;
}

export interface MemorySample {
  readonly servers: readonly ServerMemory[];
  readonly postgres: PostgresMemory | null;
  /** This process: autocannon and the bookkeeping of the soak. */
  readonly loadGeneratorRssKiB: number;
  /** 1, 5 and 15 minute load averages. */
  readonly loadAverage: readonly number[];
  /** /proc/pressure/cpu `some avg10`: the share of the last 10 s in which something waited for a CPU. */
  readonly cpuPressurePct: number | null;
}

export interface WatchedServer {
  readonly name: string;
  readonly pid: number;
  readonly baseUrl: string;
}

/** Remembers CPU ticks between samples, so that each sample says how busy each process was since the last. */
export class MemorySampler {
  private previous = new Map<number, number>();
  private previousAt = performance.now();

  constructor(
    private readonly servers: readonly WatchedServer[],
    private readonly postmasterPid: number | undefined,
    private readonly loadAverage: () => readonly number[],
    private readonly cpuPressure: () => number | null,
  ) {}

  async sample(): Promise<MemorySample> {
    const now = performance.now();
    const ticks = new Map<number, number>();
    const elapsedMs = now - this.previousAt;
    const cpuPct = (pids: readonly number[]): number | null => {
      let used = 0;
      let known = false;
      for (const pid of pids) {
        const current = processStat(pid)?.cpuTicks;
        if (current === undefined) continue;
        ticks.set(pid, current);
        const before = this.previous.get(pid);
        // A process that started in between counts from its start.
        used += current - (before ?? 0);
        known ||= before !== undefined;
      }
      return known ? (100 * used * MS_PER_TICK) / elapsedMs : null;
    };

    const servers: ServerMemory[] = [];
    for (const server of this.servers) {
      const memory = processMemory(server.pid);
      if (memory === undefined) throw new Error(`${server.name} (pid ${server.pid}) is gone`);
      const heap = await heapFigures(server.baseUrl);
      const workerPids = descendantsNamed(server.pid, WORKER_COMM).map((stat) => stat.pid);
      const each = workerPids.flatMap((pid) => {
        const worker = processMemory(pid);
        return worker === undefined ? [] : [{ pid, rssKiB: worker.rssKiB, privateKiB: worker.privateKiB }];
      });
      servers.push({
        name: server.name,
        pid: server.pid,
        rssKiB: memory.rssKiB,
        privateKiB: memory.privateKiB,
        heapUsedKiB: heap?.heapUsedKiB ?? null,
        externalKiB: heap?.externalKiB ?? null,
        cpuPct: cpuPct([server.pid]),
        workers: {
          count: each.length,
          rssKiB: sum(each.map((worker) => worker.rssKiB)),
          privateKiB: sum(each.map((worker) => worker.privateKiB)),
          cpuPct: cpuPct(each.map((worker) => worker.pid)),
          each,
        },
      });
    }

    let postgres: PostgresMemory | null = null;
    if (this.postmasterPid !== undefined) {
      const pids = [this.postmasterPid, ...childrenOf(this.postmasterPid)];
      const memories = pids.flatMap((pid) => processMemory(pid) ?? []);
      postgres = {
        count: memories.length,
        pssKiB: sum(memories.map((memory) => memory.pssKiB)),
        rssKiB: sum(memories.map((memory) => memory.rssKiB)),
        privateKiB: sum(memories.map((memory) => memory.privateKiB)),
        cpuPct: cpuPct(pids),
      };
    }

    this.previous = ticks;
    this.previousAt = now;
    return {
      servers,
      postgres,
      loadGeneratorRssKiB: Math.round(process.memoryUsage.rss() / 1024),
      loadAverage: this.loadAverage(),
      cpuPressurePct: this.cpuPressure(),
    };
  }
}

/** PostgreSQL's backends and auxiliary processes are all direct children of the postmaster. */
function childrenOf(pid: number): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => {
      const stat = processStat(Number(name));
      return stat !== undefined && stat.ppid === pid && stat.state !== "Z" ? [stat.pid] : [];
    });
}

/** prom-client's default gauges, from the server's /metrics (served without a token on loopback). */
async function heapFigures(
  baseUrl: string,
): Promise<{ readonly heapUsedKiB: number; readonly externalKiB: number } | undefined> {
  try {
    const answer = await httpRequest(`${baseUrl}/metrics`, { timeoutMs: 10_000 });
    if (answer.status !== 200) return undefined;
    const text = answer.body.toString("utf8");
    const gauge = (name: string) => {
      const match = new RegExp(`^${name} ([0-9.e+]+)$`, "m").exec(text);
      return match === null ? undefined : Math.round(Number(match[1]) / 1024);
    };
    const heapUsedKiB = gauge("nodejs_heap_size_used_bytes");
    const externalKiB = gauge("nodejs_external_memory_bytes");
    return heapUsedKiB === undefined || externalKiB === undefined ? undefined : { heapUsedKiB, externalKiB };
  } catch {
    return undefined;
  }
}

export interface TimedSample {
  /** Seconds since the load started. */
  readonly atS: number;
  readonly sample: MemorySample;
}

/**
 * One sample standing for several: the median of each memory figure (a garbage collection moves any single one),
 * the mean of the CPU shares (each covers one sampling period), and the counts, load and pressure of the last.
 */
export function summarizeSamples(samples: readonly MemorySample[]): MemorySample {
  const last = samples.at(-1);
  if (last === undefined) throw new Error("no memory sample to summarize");
  const med = (pick: (sample: MemorySample) => number | null | undefined): number =>
    median(samples.flatMap((sample) => pick(sample) ?? []));
  const medOrNull = (pick: (sample: MemorySample) => number | null | undefined): number | null =>
    samples.some((sample) => pick(sample) != null) ? med(pick) : null;
  const meanOrNull = (pick: (sample: MemorySample) => number | null | undefined): number | null => {
    const values = samples.flatMap((sample) => pick(sample) ?? []);
    return values.length === 0 ? null : sum(values) / values.length;
  };
  return {
    servers: last.servers.map((server, index) => {
      const of = (sample: MemorySample) => sample.servers[index];
      return {
        ...server,
        rssKiB: med((sample) => of(sample)?.rssKiB),
        privateKiB: med((sample) => of(sample)?.privateKiB),
        heapUsedKiB: medOrNull((sample) => of(sample)?.heapUsedKiB),
        externalKiB: medOrNull((sample) => of(sample)?.externalKiB),
        cpuPct: meanOrNull((sample) => of(sample)?.cpuPct),
        workers: {
          ...server.workers,
          rssKiB: med((sample) => of(sample)?.workers.rssKiB),
          privateKiB: med((sample) => of(sample)?.workers.privateKiB),
          cpuPct: meanOrNull((sample) => of(sample)?.workers.cpuPct),
        },
      };
    }),
    postgres:
      last.postgres === null
        ? null
        : {
            count: last.postgres.count,
            pssKiB: med((sample) => sample.postgres?.pssKiB),
            rssKiB: med((sample) => sample.postgres?.rssKiB),
            privateKiB: med((sample) => sample.postgres?.privateKiB),
            cpuPct: meanOrNull((sample) => sample.postgres?.cpuPct),
          },
    loadGeneratorRssKiB: med((sample) => sample.loadGeneratorRssKiB),
    loadAverage: last.loadAverage,
    cpuPressurePct: last.cpuPressurePct,
  };
}

function sum(values: readonly number[]): number {
  return values.reduce((total, value) => total + value, 0);
}
