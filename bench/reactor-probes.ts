// Reactor probes: the first invocation of fresh reactors (cold start: a worker must take the code), and what a
// warm worker costs in memory. Both time or read single calls rather than load, and look at the server's Deno
// workers through /proc.
import { formatTable, mib, ms } from "./format.js";
import { median, percentileOf } from "./load.js";
import type { Probe, ProbeContext, ProbeReport, TesseraHandle } from "./probes.js";
import {
  cpuSnapshot,
  cpuUsed,
  descendantsNamed,
  processMemory,
  waitUntilQuiet,
  type CpuSnapshot,
  type ProcessMemory,
} from "./proc.js";
import { reactorFixture, type ReactorFixture } from "./reactor-fixture.js";

/** The kernel's name for a worker process (the `deno` npm package's binary). */
export const WORKER_COMM = "deno";
/** The target for a first invocation, p50. */
const COLD_START_TARGET_MS = 80;
/**
 * The pool of the no-spare server. Once a few reactors have filled it, every new reactor evicts the least
 * recently used worker and starts its own, and no spare is started (pool.ts: spares are only refilled while the
 * pool has room).
 */
const NO_SPARE_MAX_WORKERS = 2;
const NO_SPARE_FILLERS = 3;
/** Reactors whose workers the memory probe reads, and the invocations each serves before it is read. */
const MEMORY_WORKERS = 10;
const WARM_INVOCATIONS = 100;

/**
 * Workers that the reactor scenario and probes leave on the server they share, with `coldStarts` per case: the
 * fixture's pool-start reactor, the warm scenario's, two cold-start cases, the memory probe's and the spare, and
 * a margin so that the pool is never near full (a full pool evicts workers and keeps no spare).
 */
export function workersNeeded(coldStarts: number): number {
  return 1 + 1 + 2 * coldStarts + MEMORY_WORKERS + 1 + 4;
}

function workerPids(pid: number): Set<number> {
  return new Set(descendantsNamed(pid, WORKER_COMM).map((stat) => stat.pid));
}

async function createReactors(fixture: ReactorFixture, count: number, name: string): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 1; index <= count; index++) ids.push(await fixture.createEchoReactor(`${name} ${index}`));
  return ids;
}

interface ColdCase {
  readonly name: string;
  /** What state the pool's spare was in when each first invocation arrived, and how that was arranged. */
  readonly spare: string;
  readonly samplesMs: readonly number[];
  /** Whether the target is judged on this case (the realistic one) or it is shown for information. */
  readonly judged: boolean;
  /** Invocations after which the workers changed as `spare` says (one started, and one evicted or not). */
  readonly confirmed?: { readonly held: number; readonly of: number };
  /** Waits for an idle server that gave up (a machine too busy to tell). */
  readonly notQuiet: number;
  /**
   * CPU time per call, from the idle point before it to the idle point after it: what a cold start costs
   * whatever the machine's load (starting the next spare included), where wall-clock time depends on the load.
   */
  readonly cpu?: { readonly serverMs: readonly number[]; readonly workersMs: readonly number[] };
}

/** How the set of workers must change across one first invocation for the case to be what it claims. */
interface WorkerChange {
  readonly started: number;
  readonly ended: number;
}

/**
 * First invocations of `ids`, each sent once the server and its workers have been idle for 100 ms (so a spare,
 * if the pool keeps one, has finished booting), and, if `change` is given, checked against it at the next idle
 * point.
 */
async function spacedFirstInvocations(
  server: TesseraHandle,
  fixture: ReactorFixture,
  ids: readonly string[],
  change?: WorkerChange,
): Promise<{
  samplesMs: number[];
  confirmed: number;
  notQuiet: number;
  cpu: { serverMs: number[]; workersMs: number[] };
}> {
  const samplesMs: number[] = [];
  const cpu = { serverMs: [] as number[], workersMs: [] as number[] };
  let confirmed = 0;
  let notQuiet = 0;
  let previous: CpuSnapshot | undefined;
  const settle = async () => {
    if (!(await waitUntilQuiet(server.pid, WORKER_COMM)).quiet) notQuiet++;
    const current = cpuSnapshot(server.pid, WORKER_COMM);
    if (previous !== undefined) {
      const before = previous.descendants;
      const started = [...current.descendants.keys()].filter((pid) => !before.has(pid)).length;
      const ended = [...before.keys()].filter((pid) => !current.descendants.has(pid)).length;
      if (change !== undefined && started === change.started && ended === change.ended) confirmed++;
      // An evicted worker's last ticks are lost: a few at most, it was idle.
      const used = cpuUsed(previous, current);
      cpu.serverMs.push(used.rootMs);
      cpu.workersMs.push(used.descendantsMs);
    }
    previous = current;
  };
  for (const id of ids) {
    await settle();
    samplesMs.push(await fixture.react(id));
  }
  await settle();
  return { samplesMs, confirmed, notQuiet, cpu };
}

async function coldStart(context: ProbeContext): Promise<ProbeReport> {
  const { tessera, coldStarts: count, progress } = context;
  const fixture = await reactorFixture(tessera.context);
  const cases: ColdCase[] = [];

  progress(`reactor cold start: ${count} fresh reactors, each once the spare is ready`);
  const spacedIds = await createReactors(fixture, count, "bench cold start (spare ready)");
  // The spare becomes the reactor's worker and the pool starts a new spare: one worker more, none gone.
  const spaced = await spacedFirstInvocations(tessera, fixture, spacedIds, { started: 1, ended: 0 });
  cases.push({
    name: "spare ready",
    spare:
      "each call sent once the server and its workers had been idle for 100 ms: the spare had booted, and takes the code",
    samplesMs: spaced.samplesMs,
    judged: true,
    confirmed: { held: spaced.confirmed, of: count },
    notQuiet: spaced.notQuiet,
    cpu: spaced.cpu,
  });

  // The same reactors again, one call at a time from an idle point: what the first calls are compared with.
  const secondMs: number[] = [];
  for (const id of spacedIds) secondMs.push(await fixture.react(id));

  progress(`reactor cold start: ${count} fresh reactors, back to back`);
  const backToBackIds = await createReactors(fixture, count, "bench cold start (back to back)");
  const quiet = await waitUntilQuiet(tessera.pid, WORKER_COMM);
  const backToBackMs: number[] = [];
  for (const id of backToBackIds) backToBackMs.push(await fixture.react(id));
  cases.push({
    name: "back to back",
    spare:
      "each call sent as soon as the previous one answered: the spare was started during the previous cold start and is usually still booting",
    samplesMs: backToBackMs,
    judged: false,
    notQuiet: quiet.quiet ? 0 : 1,
  });

  progress(
    `reactor cold start: ${count} fresh reactors on a second server with TESSERA_REACTOR_MAX_WORKERS=${NO_SPARE_MAX_WORKERS} (no spare)`,
  );
  const small = await context.startTessera({ TESSERA_REACTOR_MAX_WORKERS: String(NO_SPARE_MAX_WORKERS) });
  try {
    const smallFixture = await reactorFixture(small.context);
    const fillers = await createReactors(smallFixture, NO_SPARE_FILLERS, "bench pool filler");
    await spacedFirstInvocations(small, smallFixture, fillers);
    const ids = await createReactors(smallFixture, count, "bench cold start (no spare)");
    // The least recently used worker is killed and a worker is started for the call: one started, one gone.
    const noSpare = await spacedFirstInvocations(small, smallFixture, ids, { started: 1, ended: 1 });
    cases.push({
      name: "no spare",
      spare: `a second server whose pool (TESSERA_REACTOR_MAX_WORKERS=${NO_SPARE_MAX_WORKERS}) is full, so it keeps no spare: each call evicts a worker and starts one; spaced as "spare ready"`,
      samplesMs: noSpare.samplesMs,
      judged: false,
      confirmed: { held: noSpare.confirmed, of: count },
      notQuiet: noSpare.notQuiet,
      cpu: noSpare.cpu,
    });
  } finally {
    await small.stop();
  }

  const failures: string[] = [];
  for (const coldCase of cases) {
    if (coldCase.judged && !(median(coldCase.samplesMs) <= COLD_START_TARGET_MS)) failures.push("p50");
    if (coldCase.confirmed !== undefined && coldCase.confirmed.held < coldCase.confirmed.of) {
      failures.push(`${coldCase.name}: workers not as described`);
    }
    if (coldCase.notQuiet > 0) failures.push(`${coldCase.name}: server never idle`);
  }

  const rows = cases.map((coldCase) => {
    const p50 = median(coldCase.samplesMs);
    const within = p50 <= COLD_START_TARGET_MS;
    return [
      `first invocation, ${coldCase.name}`,
      String(coldCase.samplesMs.length),
      ...latencyCells(coldCase.samplesMs),
      coldCase.cpu === undefined
        ? ""
        : `${median(coldCase.cpu.serverMs).toFixed(0)} + ${median(coldCase.cpu.workersMs).toFixed(0)}`,
      coldCase.confirmed === undefined ? "" : `${coldCase.confirmed.held}/${coldCase.confirmed.of}`,
      `p50 ≤ ${COLD_START_TARGET_MS} ms${coldCase.judged ? "" : " (info)"}`,
      within ? "pass" : coldCase.judged ? "FAIL" : "over",
    ];
  });
  rows.push([
    "second invocation, same reactors",
    String(secondMs.length),
    ...latencyCells(secondMs),
    "",
    "",
    "",
    "",
  ]);
  const table = [
    formatTable(
      [
        "reactor cold start",
        "calls",
        "p50 ms",
        "p99 ms",
        "min ms",
        "max ms",
        "CPU ms, server + workers",
        "workers as said",
        "target",
        "result",
      ],
      rows,
    ),
    ...cases.map((coldCase) => `  ${coldCase.name}: ${coldCase.spare}`),
    `  p99 of ${count} calls is the slowest of them; times are the client's, from sending the request to reading the answer.`,
    "  CPU: medians of the CPU time used from the idle point before a call to the one after it (the next spare's start",
    "  included), in 10 ms ticks; unlike the times, it hardly depends on the machine's load.",
  ].join("\n");

  return {
    name: "reactor cold start",
    kind: "cold-start",
    failures,
    pass: failures.length === 0,
    table,
    figures: {
      targetP50Ms: COLD_START_TARGET_MS,
      cases: cases.map((coldCase) => ({ ...coldCase, ...latencyFigures(coldCase.samplesMs) })),
      secondInvocation: { samplesMs: secondMs, ...latencyFigures(secondMs) },
    },
  };
}

function latencyFigures(samples: readonly number[]) {
  return {
    p50Ms: median(samples),
    p99Ms: percentileOf(samples, 0.99),
    minMs: Math.min(...samples),
    maxMs: Math.max(...samples),
  };
}

function latencyCells(samples: readonly number[]): string[] {
  const figures = latencyFigures(samples);
  return [ms(figures.p50Ms), ms(figures.p99Ms), ms(figures.minMs), ms(figures.maxMs)];
}

interface MemoryGroup {
  readonly name: string;
  readonly pids: readonly number[];
  readonly memory: readonly ProcessMemory[];
}

function readGroup(name: string, pids: readonly number[]): MemoryGroup {
  return { name, pids, memory: pids.flatMap((pid) => processMemory(pid) ?? []) };
}

/** The youngest worker: after an idle point, the spare the pool started when it handed the last one out. */
function youngest(pid: number): number | undefined {
  return descendantsNamed(pid, WORKER_COMM).at(-1)?.pid;
}

async function workerMemory(context: ProbeContext): Promise<ProbeReport> {
  const { tessera, progress } = context;
  const fixture = await reactorFixture(tessera.context);
  progress(
    `reactor worker memory: ${MEMORY_WORKERS} fresh reactors, ${WARM_INVOCATIONS + 1} invocations each`,
  );
  const failures: string[] = [];
  if (!(await waitUntilQuiet(tessera.pid, WORKER_COMM)).quiet) failures.push("server never idle");
  const before = workerPids(tessera.pid);
  const spareBefore = youngest(tessera.pid);
  const ids = await createReactors(fixture, MEMORY_WORKERS, "bench memory");
  for (const id of ids) {
    if (!(await waitUntilQuiet(tessera.pid, WORKER_COMM)).quiet) failures.push("server never idle");
    await fixture.react(id);
  }
  for (const id of ids) for (let call = 0; call < WARM_INVOCATIONS; call++) await fixture.react(id);
  if (!(await waitUntilQuiet(tessera.pid, WORKER_COMM)).quiet) failures.push("server never idle");

  const after = workerPids(tessera.pid);
  const spareAfter = youngest(tessera.pid);
  // The first reactor took the spare that was waiting; each took the next; the last left a new one waiting.
  const warm = [
    ...(spareBefore === undefined ? [] : [spareBefore]),
    ...[...after].filter((p) => !before.has(p)),
  ]
    .filter((pid) => pid !== spareAfter && after.has(pid))
    .sort((a, b) => a - b);
  if (warm.length !== MEMORY_WORKERS) {
    failures.push(`found ${warm.length} workers for ${MEMORY_WORKERS} reactors`);
  }
  const groups = [
    readGroup(`warm workers (this probe's echo reactors, ${WARM_INVOCATIONS + 1} calls each)`, warm),
    readGroup(
      "every loaded worker of the server",
      [...after].filter((pid) => pid !== spareAfter),
    ),
    readGroup("the spare (booted, no code)", spareAfter === undefined ? [] : [spareAfter]),
  ];
  const server = readGroup("the server (Node)", [tessera.pid]);

  const rows = [...groups, server].map((group) => {
    const column = (pick: (memory: ProcessMemory) => number) => {
      const values = group.memory.map(pick);
      if (values.length === 0) return "";
      const middle = mib(median(values));
      return values.length === 1
        ? middle
        : `${middle} (${mib(Math.min(...values))}–${mib(Math.max(...values))})`;
    };
    return [
      group.name,
      String(group.memory.length),
      column((m) => m.privateKiB),
      column((m) => m.pssKiB),
      column((m) => m.rssKiB),
    ];
  });
  const table = [
    formatTable(["reactor worker memory", "processes", "private MiB", "Pss MiB", "RSS MiB"], rows),
    "  Medians over the processes (min–max); private = Private_Clean + Private_Dirty of /proc/<pid>/smaps_rollup,",
    "  what one more worker costs; RSS counts the Deno binary's shared pages in every worker.",
  ].join("\n");

  return {
    name: "reactor worker memory",
    kind: "worker-memory",
    failures: [...new Set(failures)],
    pass: failures.length === 0,
    table,
    figures: {
      groups: [...groups, server].map((group) => ({
        name: group.name,
        pids: group.pids,
        memory: group.memory,
        ...(group.memory.length > 0 && {
          medianPrivateKiB: median(group.memory.map((m) => m.privateKiB)),
          medianPssKiB: median(group.memory.map((m) => m.pssKiB)),
          medianRssKiB: median(group.memory.map((m) => m.rssKiB)),
        }),
      })),
    },
  };
}

export const reactorProbes: readonly Probe[] = [
  { name: "reactor cold start", run: coldStart },
  { name: "reactor worker memory", run: workerMemory },
];
