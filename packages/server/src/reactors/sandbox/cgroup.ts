import { spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * The kernel's memory limit for workers (docs/reactors.md#why-a-deno-process-per-reactor): the RSS watchdog only looks
 * while an invocation runs, every few milliseconds, so a fast allocation overshoots it; a cgroup limit is enforced on
 * every page the worker touches. Each worker gets its own cgroup, `<the server's memory
 * cgroup>/tessera-reactors-<server pid>/<worker pid>`, so one reactor's memory never counts against another's and an
 * OOM kill names its worker.
 * Plain data, so that limits can be handed to another process.
 */
export type MemoryCgroup =
  | { readonly kind: "v1" | "v2"; readonly dir: string; readonly limitBytes: number }
  | { readonly kind: "none"; readonly reason: string };

export type CgroupLimit = Extract<MemoryCgroup, { kind: "v1" | "v2" }>;

export interface CgroupOptions {
  /** TESSERA_REACTOR_CGROUP. */
  readonly mode: "auto" | "off";
  readonly limitBytes: number;
  /** Where the cgroup hierarchies are mounted; a test points it elsewhere to stand for a host without them. */
  readonly root?: string;
}

const STALE = /^tessera-reactors-(\d+)$/;

/**
 * Whether this process may give workers a memory cgroup, tried for real: the server's own memory cgroup is
 * found, this server's directory created under it, and a probe process moved into a child with the limit. Root
 * normally can; an unprivileged server, a read-only /sys/fs/cgroup or a cgroup v2 that holds the server's own
 * processes cannot, and workers then rely on the watchdog alone.
 */
export async function detectCgroup(options: CgroupOptions): Promise<MemoryCgroup> {
  if (options.mode === "off") return { kind: "none", reason: "TESSERA_REACTOR_CGROUP is off" };
  if (process.platform !== "linux") return { kind: "none", reason: "cgroups exist on Linux only" };
  let cgroup: CgroupLimit | undefined;
  try {
    const own = ownMemoryCgroup(options.root ?? "/sys/fs/cgroup");
    removeStale(own.dir);
    // cgroup v2 gives a child the memory controller only if its parent lists it in subtree_control.
    if (own.kind === "v2") enableMemory(own.dir);
    cgroup = {
      kind: own.kind,
      dir: path.join(own.dir, `tessera-reactors-${process.pid}`),
      limitBytes: options.limitBytes,
    };
    await probe(cgroup);
    return cgroup;
  } catch (error) {
    if (cgroup !== undefined) tryRmdir(cgroup.dir);
    return { kind: "none", reason: (error as Error).message };
  }
}

/**
 * Creates the cgroup of worker `pid`, sets its limit and moves the worker in; returns its directory. Called right
 * after the spawn, before the worker is sent any code. On failure nothing is left behind.
 */
export function placeWorker(cgroup: CgroupLimit, pid: number): string {
  if (!existsSync(cgroup.dir)) {
    mkdirSync(cgroup.dir, { recursive: true });
    if (cgroup.kind === "v2") enableMemory(cgroup.dir);
  }
  const dir = path.join(cgroup.dir, String(pid));
  // A worker of the same pid whose cgroup was not removed left it empty, with its OOM count: made afresh.
  if (existsSync(dir)) rmdirSync(dir);
  mkdirSync(dir);
  try {
    setLimit(cgroup, dir);
    writeFileSync(path.join(dir, "cgroup.procs"), String(pid));
    return dir;
  } catch (error) {
    tryRmdir(dir);
    throw error;
  }
}

/** Whether the kernel killed a process of the cgroup at `dir` for exceeding its limit. */
export function oomKilled(cgroup: CgroupLimit, dir: string): boolean {
  const file = cgroup.kind === "v1" ? "memory.oom_control" : "memory.events";
  try {
    const count = /^oom_kill (\d+)$/m.exec(readFileSync(path.join(dir, file), "latin1"))?.[1];
    return Number(count ?? 0) > 0;
  } catch {
    return false;
  }
}

/**
 * Removes a worker's cgroup once its process is gone. The kernel may still hold the exited task for a moment
 * (EBUSY), so it is tried a few times.
 */
export async function removeWorkerCgroup(dir: string): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    if (tryRmdir(dir) !== "EBUSY") return;
    await sleep(20);
  }
}

/**
 * Removes this server's directory of worker cgroups, with any empty worker cgroup left in it (a worker started by
 * another process from the same limits, as a test does). Given up after a second while a live worker is in it.
 */
export async function removeServerCgroup(cgroup: CgroupLimit): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    removeEmptyChildren(cgroup.dir);
    if (tryRmdir(cgroup.dir) !== "EBUSY") return;
    await sleep(20);
  }
}

/** What `detectCgroup` found, for the log line an operator checks. */
export function describeCgroup(cgroup: MemoryCgroup): string {
  if (cgroup.kind === "none") return `the RSS watchdog only (no memory cgroup: ${cgroup.reason})`;
  const mib = Math.round(cgroup.limitBytes / 2 ** 20);
  return `a cgroup ${cgroup.kind} memory limit of ${mib} MiB per worker under ${cgroup.dir}, and the RSS watchdog`;
}

/** The server's own memory cgroup, from /proc/self/cgroup: the v1 memory hierarchy if mounted, else v2. */
function ownMemoryCgroup(root: string): { kind: "v1" | "v2"; dir: string } {
  const lines = readFileSync("/proc/self/cgroup", "latin1").trim().split("\n");
  const entries = lines.map((line) => {
    const [, controllers = "", ...rest] = line.split(":");
    return { controllers: controllers.split(","), path: rest.join(":") };
  });
  const v1 = entries.find((entry) => entry.controllers.includes("memory"));
  if (v1 !== undefined) {
    const dir = path.join(root, "memory", v1.path);
    if (!existsSync(path.join(dir, "memory.limit_in_bytes"))) {
      throw new Error(`the cgroup v1 memory controller is not mounted at ${dir}`);
    }
    return { kind: "v1", dir };
  }
  const v2 = entries.find((entry) => entry.controllers.length === 1 && entry.controllers[0] === "");
  const dir = v2 === undefined ? undefined : path.join(root, v2.path);
  if (dir === undefined || !existsSync(path.join(dir, "cgroup.controllers"))) {
    throw new Error(`no cgroup memory controller is mounted under ${root}`);
  }
  if (!readFileSync(path.join(dir, "cgroup.controllers"), "latin1").split(/\s+/).includes("memory")) {
    throw new Error(`the cgroup v2 memory controller is not delegated to ${dir}`);
  }
  return { kind: "v2", dir };
}

/** Fails with EBUSY when `dir` holds processes, as the server's own cgroup usually does (v2's "no internal process" rule). */
function enableMemory(dir: string): void {
  const control = path.join(dir, "cgroup.subtree_control");
  if (readFileSync(control, "latin1").split(/\s+/).includes("memory")) return;
  try {
    writeFileSync(control, "+memory");
  } catch (error) {
    throw new Error(
      `cannot enable the memory controller for children of ${dir}: ${(error as Error).message}`,
    );
  }
}

function setLimit(cgroup: CgroupLimit, dir: string): void {
  const limit = String(cgroup.limitBytes);
  // Swap would let a worker hold more than its limit: its swap allowance is none (v1 counts memory and swap
  // together in memsw). Either file is absent when the kernel does not account swap, and then there is none.
  const [memory, swap, swapValue] =
    cgroup.kind === "v1"
      ? ["memory.limit_in_bytes", "memory.memsw.limit_in_bytes", limit]
      : ["memory.max", "memory.swap.max", "0"];
  writeFileSync(path.join(dir, memory), limit);
  if (existsSync(path.join(dir, swap))) writeFileSync(path.join(dir, swap), swapValue);
}

/** Moves a short-lived process into a cgroup the way a worker would be, and checks the kernel agrees. */
async function probe(cgroup: CgroupLimit): Promise<void> {
  const child = spawn("sleep", ["30"], { stdio: "ignore" });
  const exited = once(child, "exit").catch(() => undefined);
  let dir: string | undefined;
  try {
    await once(child, "spawn");
    const pid = child.pid;
    if (pid === undefined) throw new Error("the probe process did not start");
    dir = placeWorker(cgroup, pid);
    const limitFile = path.join(dir, cgroup.kind === "v1" ? "memory.limit_in_bytes" : "memory.max");
    const limit = Number(readFileSync(limitFile, "latin1").trim());
    const placed = readFileSync(`/proc/${pid}/cgroup`, "latin1").includes(
      `/${path.basename(cgroup.dir)}/${pid}\n`,
    );
    if (limit !== cgroup.limitBytes || !placed) {
      throw new Error(`a process moved into ${dir} was not held to its limit`);
    }
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
    if (dir !== undefined) await removeWorkerCgroup(dir);
  }
}

/** Directories of servers that died without removing theirs (a SIGKILL): their workers died with them. */
function removeStale(own: string): void {
  for (const name of readdirSync(own)) {
    const pid = STALE.exec(name)?.[1];
    if (pid === undefined || Number(pid) === process.pid || isAlive(Number(pid))) continue;
    const dir = path.join(own, name);
    removeEmptyChildren(dir);
    tryRmdir(dir);
  }
}

/** rmdir refuses a cgroup that still holds a process, so only those of gone workers are removed. */
function removeEmptyChildren(dir: string): void {
  try {
    for (const child of readdirSync(dir, { withFileTypes: true })) {
      if (child.isDirectory()) tryRmdir(path.join(dir, child.name));
    }
  } catch {
    // Already removed.
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** rmdir, answering the error code instead of throwing: a cgroup that is gone or busy is not a failure here. */
function tryRmdir(dir: string): string | undefined {
  try {
    rmdirSync(dir);
    return undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code;
  }
}
