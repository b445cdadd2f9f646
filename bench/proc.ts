// The server's reactor workers, seen from outside through /proc (Linux): the server says nothing about them over
// HTTP, so the benchmark finds them as an operator would, as Deno processes descending from the server process.
import { readdirSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";

export interface ProcessStat {
  readonly pid: number;
  readonly ppid: number;
  /** The executable's name as the kernel keeps it (at most 15 characters). */
  readonly comm: string;
  readonly state: string;
  /** User plus system CPU time, in clock ticks. */
  readonly cpuTicks: number;
  /** When the process started, in clock ticks since boot: orders processes by age. */
  readonly startTicks: number;
}

/** /proc/<pid>/stat, or undefined if the process is gone. */
export function processStat(pid: number): ProcessStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "latin1");
  } catch {
    return undefined;
  }
  // The name sits in parentheses and may itself hold spaces and parentheses: the last ")" ends it.
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  // Fields from the state on, numbered as proc(5) does from 3.
  const fields = text.slice(close + 2).split(" ");
  const field = (number: number) => Number(fields[number - 3]);
  return {
    pid,
    ppid: field(4),
    comm: text.slice(open + 1, close),
    state: fields[0] ?? "?",
    cpuTicks: field(14) + field(15),
    startTicks: field(22),
  };
}

function allProcesses(): ProcessStat[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => processStat(Number(name)) ?? []);
}

/**
 * Live processes named `comm` whose parent chain leads to `rootPid`, oldest first. Workers start as
 * `setpriv … prlimit … deno`, each of which execs the next, so a worker is a direct child of the server; the
 * whole chain is walked all the same. Zombies (a killed worker the server has not reaped yet) are left out.
 */
export function descendantsNamed(rootPid: number, comm: string): ProcessStat[] {
  const processes = allProcesses();
  const byPid = new Map(processes.map((stat) => [stat.pid, stat]));
  const descends = (stat: ProcessStat): boolean => {
    for (let parent = byPid.get(stat.ppid); parent !== undefined; parent = byPid.get(parent.ppid)) {
      if (parent.pid === rootPid) return true;
    }
    return false;
  };
  return processes
    .filter((stat) => stat.comm === comm && stat.state !== "Z" && descends(stat))
    .sort((a, b) => a.startTicks - b.startTicks || a.pid - b.pid);
}

export interface ProcessMemory {
  /** Resident set: every page mapped and in memory, shared ones (the Deno binary's text) included. */
  readonly rssKiB: number;
  /** Proportional set: shared pages divided among the processes sharing them. */
  readonly pssKiB: number;
  /** Pages only this process maps (Private_Clean + Private_Dirty): what one more worker costs. */
  readonly privateKiB: number;
}

/** From /proc/<pid>/smaps_rollup, or undefined if the process is gone. */
export function processMemory(pid: number): ProcessMemory | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/smaps_rollup`, "latin1");
  } catch {
    return undefined;
  }
  const kib = (name: string): number => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text);
    if (match === null) throw new Error(`/proc/${pid}/smaps_rollup has no ${name}`);
    return Number(match[1]);
  };
  return {
    rssKiB: kib("Rss"),
    pssKiB: kib("Pss"),
    privateKiB: kib("Private_Clean") + kib("Private_Dirty"),
  };
}

/** /proc counts CPU time in USER_HZ ticks, which Linux fixes at 100 a second for user space. */
const MS_PER_TICK = 10;

/** CPU ticks so far of a process and of each of its live `comm` descendants. */
export interface CpuSnapshot {
  readonly root: number;
  readonly descendants: ReadonlyMap<number, number>;
}

export function cpuSnapshot(rootPid: number, comm: string): CpuSnapshot {
  return {
    root: processStat(rootPid)?.cpuTicks ?? 0,
    descendants: new Map(descendantsNamed(rootPid, comm).map((stat) => [stat.pid, stat.cpuTicks])),
  };
}

/**
 * CPU milliseconds used between two snapshots by the process and by its descendants, those started in between
 * included. One that ended in between takes its last ticks with it.
 */
export function cpuUsed(
  before: CpuSnapshot,
  after: CpuSnapshot,
): { readonly rootMs: number; readonly descendantsMs: number } {
  let ticks = 0;
  for (const [pid, now] of after.descendants) ticks += now - (before.descendants.get(pid) ?? 0);
  return { rootMs: (after.root - before.root) * MS_PER_TICK, descendantsMs: ticks * MS_PER_TICK };
}

export interface Quiet {
  readonly quiet: boolean;
  readonly waitedMs: number;
}

/**
 * Waits until `rootPid` and its `comm` descendants use no CPU and start or end no process for `quietMs` (a worker
 * still booting, or a spare being started, shows as CPU time). Gives up after `timeoutMs` on a machine too busy to
 * tell, and says so. CPU time is counted in clock ticks (10 ms), so "no CPU" means less than one tick.
 */
export async function waitUntilQuiet(
  rootPid: number,
  comm: string,
  quietMs = 100,
  timeoutMs = 10_000,
): Promise<Quiet> {
  const started = performance.now();
  const sample = () => {
    const stats = [processStat(rootPid), ...descendantsNamed(rootPid, comm)];
    return stats.map((stat) => (stat === undefined ? "gone" : `${stat.pid}:${stat.cpuTicks}`)).join(",");
  };
  let before = sample();
  for (;;) {
    await sleep(quietMs);
    const after = sample();
    const waitedMs = performance.now() - started;
    if (after === before) return { quiet: true, waitedMs };
    if (waitedMs >= timeoutMs) return { quiet: false, waitedMs };
    before = after;
  }
}
