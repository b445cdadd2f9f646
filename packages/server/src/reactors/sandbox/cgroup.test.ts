import { spawn } from "node:child_process";
import { once } from "node:events";
import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { detectCgroup, removeServerCgroup, type CgroupLimit } from "./cgroup.js";
import { ReactorPool } from "./pool.js";
import { workerLimits, type SandboxSettings } from "./setup.js";
import { ReactorWorker, WorkerStartError, type Invocation, type WorkerLimits } from "./worker.js";

// The sandbox does not touch the store, so its tests run in one project only; the API's run on both.
const ONCE = process.env.TESSERA_TEST_STORE === "postgres";
const MIB = 2 ** 20;
const LIMIT_MIB = 192;

/**
 * Why this host gives the tests' process no memory cgroup to divide, judged without the code under test (so
 * that a regression in detection fails the tests instead of skipping them): not Linux, not root, no memory
 * controller, a read-only hierarchy, or a cgroup v2 that holds processes and does not pass memory on.
 */
function whyNoCgroup(): string | undefined {
  if (process.platform !== "linux") return "not Linux";
  if (process.getuid?.() !== 0) return "the tests do not run as root";
  const entries = readFileSync("/proc/self/cgroup", "latin1")
    .trim()
    .split("\n")
    .map((line) => line.split(":"));
  const v1 = entries.find(([, controllers]) => controllers?.split(",").includes("memory"));
  const v2 = entries.find(([id, controllers]) => id === "0" && controllers === "");
  const own =
    v1 !== undefined
      ? path.join("/sys/fs/cgroup/memory", v1.slice(2).join(":"))
      : path.join("/sys/fs/cgroup", v2?.slice(2).join(":") ?? "/");
  const control = path.join(own, v1 !== undefined ? "memory.limit_in_bytes" : "cgroup.subtree_control");
  if (!existsSync(control)) return `no memory cgroup at ${own}`;
  try {
    accessSync(own, constants.W_OK);
  } catch (error) {
    return `${own} is not writable (${(error as NodeJS.ErrnoException).code})`;
  }
  if (v1 === undefined && !readFileSync(control, "latin1").includes("memory")) {
    return `cgroup v2 ${own} does not pass the memory controller to children`;
  }
  return undefined;
}
const unavailable = ONCE ? undefined : whyNoCgroup();

const ALLOCATES_1_5_GB =
  "module.exports = async () => { const b = new Uint8Array(1.5 * 2 ** 30); b.fill(1); return { raw: b.length }; };";

function invocation(overrides: Partial<Invocation> = {}): Invocation {
  return {
    args: {},
    configuration: {},
    svc: false,
    timeoutMs: 20_000,
    onRpc: () => Promise.reject(new Error("no svc in this test")),
    ...overrides,
  };
}

/** The memory cgroup of a process (v1's memory hierarchy, else v2's), as the kernel reports it; undefined once the process is gone. */
function memoryCgroupOf(pid: number): string | undefined {
  let entries: string[][];
  try {
    entries = readFileSync(`/proc/${pid}/cgroup`, "latin1")
      .trim()
      .split("\n")
      .map((line) => line.split(":"));
  } catch {
    return undefined;
  }
  const entry =
    entries.find(([, controllers]) => controllers?.split(",").includes("memory")) ??
    entries.find(([id, controllers]) => id === "0" && controllers === "");
  return entry?.slice(2).join(":");
}

async function waitFor(condition: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return condition();
}

describe.skipIf(ONCE)("reactor workers' memory", () => {
  let dir: string;
  const settings = (overrides: Partial<SandboxSettings> = {}): SandboxSettings => ({
    dir: path.join(dir, "deno"),
    modules: [],
    egress: "",
    heapMiB: 64,
    rssMiB: LIMIT_MIB,
    frameBytes: 1024 * 1024,
    logBytes: 16 * 1024,
    loadTimeoutMs: 15_000,
    ...overrides,
  });

  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tessera-cgroup-"));
    // Workers run as nobody when the tests run as root: the harness must be reachable for them.
    chmodSync(dir, 0o755);
  });

  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  describe.skipIf(unavailable !== undefined)(
    `in a cgroup${unavailable === undefined ? "" : ` (skipped: this host allows none: ${unavailable})`}`,
    () => {
      let limits: WorkerLimits;
      let cgroup: CgroupLimit;

      beforeAll(async () => {
        limits = await workerLimits(settings());
        if (limits.cgroup.kind === "none") throw new Error(`no cgroup: ${limits.cgroup.reason}`);
        cgroup = limits.cgroup;
      });

      afterAll(async () => {
        if (cgroup !== undefined) await removeServerCgroup(cgroup);
      });

      it("puts each worker in its own cgroup with the limit before it is sent code, and removes it when the worker exits", async () => {
        // A spare: spawned, no code sent yet.
        const worker = await ReactorWorker.spawn(limits);
        try {
          const pid = worker.pid!;
          const own = path.join(cgroup.dir, String(pid));
          expect(worker.cgroup).toBe(own);
          expect(memoryCgroupOf(pid)).toMatch(new RegExp(`/tessera-reactors-${process.pid}/${pid}$`));
          const limitFile = cgroup.kind === "v1" ? "memory.limit_in_bytes" : "memory.max";
          expect(readFileSync(path.join(own, limitFile), "latin1").trim()).toBe(String(LIMIT_MIB * MIB));
          const swapFile = cgroup.kind === "v1" ? "memory.memsw.limit_in_bytes" : "memory.swap.max";
          if (existsSync(path.join(own, swapFile))) {
            expect(readFileSync(path.join(own, swapFile), "latin1").trim()).toBe(
              cgroup.kind === "v1" ? String(LIMIT_MIB * MIB) : "0",
            );
          }
          expect(readFileSync(path.join(own, "cgroup.procs"), "latin1").trim()).toBe(String(pid));

          await worker.load("module.exports = async () => ({ raw: 'ok' });", []);
          expect(await worker.invoke(invocation())).toMatchObject({ kind: "returned", value: { raw: "ok" } });
          await worker.stop();
          expect(existsSync(own)).toBe(false);
        } finally {
          await worker.stop();
        }
      });

      it("stops a 1.5 GB allocation with the cgroup alone (watchdog disabled) and says it ran out of memory", async () => {
        const noWatchdog: WorkerLimits = { ...limits, rssBytes: Number.POSITIVE_INFINITY };
        const worker = await ReactorWorker.start(noWatchdog, ALLOCATES_1_5_GB, []);
        const own = worker.cgroup!;
        const started = Date.now();
        const outcome = await worker.invoke(invocation());
        expect(outcome).toEqual({
          kind: "crashed",
          reason: `the reactor ran out of memory (its limit is ${LIMIT_MIB} MiB)`,
          logs: [],
        });
        // Well before the invocation's timeout: a kill, not a hang.
        expect(Date.now() - started).toBeLessThan(15_000);
        await worker.stop();
        expect(existsSync(own)).toBe(false);
      });

      it("stops memory a reactor grows between invocations, which the watchdog does not watch", async () => {
        const worker = await ReactorWorker.start(
          limits,
          // Timers are cleared when the invocation ends (harness.js); a message channel that keeps posting to
          // itself is not, and stands for whatever else a reactor can leave running between invocations.
          `const hoard = [];
          module.exports = async () => {
            const { port1, port2 } = new MessageChannel();
            port1.onmessage = () => {
              hoard.push(new Uint8Array(32 * 2 ** 20).fill(1));
              port2.postMessage(0);
            };
            port2.postMessage(0);
            return { raw: "returned" };
          };`,
          [],
        );
        try {
          const own = worker.cgroup!;
          expect(await worker.invoke(invocation())).toMatchObject({
            kind: "returned",
            value: { raw: "returned" },
          });
          expect(await waitFor(() => !worker.alive, 20_000)).toBe(true);
          await expect(worker.invoke(invocation())).rejects.toThrow(
            `worker is dead: the reactor ran out of memory (its limit is ${LIMIT_MIB} MiB)`,
          );
          expect(await waitFor(() => !existsSync(own), 2_000)).toBe(true);
        } finally {
          await worker.stop();
        }
      });

      it("removes every worker's cgroup and the server's directory when the pool closes", async () => {
        const pool = new ReactorPool({
          limits,
          maxWorkers: 4,
          workersPerReactor: 1,
          idleMs: 60_000,
          spares: 1,
        });
        const echo = (key: string) => ({
          key,
          code: "module.exports = async () => ({ raw: 1 });",
          modules: [],
        });
        await pool.invoke(echo("a"), invocation());
        await pool.invoke(echo("b"), invocation());
        const pids = await pool.pids();
        expect(pids).toHaveLength(3);
        const dirs = pids.map((pid) => path.join(cgroup.dir, String(pid)));
        for (const [i, pid] of pids.entries()) {
          expect(memoryCgroupOf(pid)).toMatch(new RegExp(`/${pid}$`));
          expect(existsSync(dirs[i]!)).toBe(true);
        }
        await pool.close();
        for (const pid of pids) expect(memoryCgroupOf(pid)).toBeUndefined();
        for (const own of dirs) expect(existsSync(own)).toBe(false);
        expect(existsSync(cgroup.dir)).toBe(false);
      });

      it("removes the cgroups of a server that died without removing them", async () => {
        const gone = spawn("true");
        await once(gone, "exit");
        const stale = path.join(path.dirname(cgroup.dir), `tessera-reactors-${gone.pid}`);
        mkdirSync(path.join(stale, "12345"), { recursive: true });
        const detected = await detectCgroup({ mode: "auto", limitBytes: LIMIT_MIB * MIB });
        expect(detected).toEqual(cgroup);
        expect(existsSync(stale)).toBe(false);
      });
    },
  );

  it("runs workers on the watchdog alone where no cgroup can be had, or when told not to use one", async () => {
    const missing = path.join(dir, "no-cgroups-here");
    const limits = await workerLimits(settings({ cgroupRoot: missing }));
    expect(limits.cgroup).toEqual({
      kind: "none",
      reason: expect.stringMatching(
        /^(no cgroup memory controller is mounted under|the cgroup v1 memory controller is not mounted at) /,
      ),
    });
    expect(await detectCgroup({ mode: "off", limitBytes: MIB })).toEqual({
      kind: "none",
      reason: "TESSERA_REACTOR_CGROUP is off",
    });
    const worker = await ReactorWorker.start(limits, ALLOCATES_1_5_GB, []);
    try {
      expect(worker.cgroup).toBeUndefined();
      // Left where the server is.
      expect(memoryCgroupOf(worker.pid!)).toBe(memoryCgroupOf(process.pid));
      expect(await worker.invoke(invocation())).toEqual({
        kind: "crashed",
        reason: `the reactor used more than ${LIMIT_MIB} MiB of memory`,
        logs: [],
      });
    } finally {
      await worker.stop();
    }
  });

  it("refuses to start a worker it cannot put in its cgroup", async () => {
    const limits = await workerLimits(settings({ cgroup: "off" }));
    const file = path.join(dir, "not-a-directory");
    writeFileSync(file, "");
    const broken: WorkerLimits = {
      ...limits,
      cgroup: { kind: "v1", dir: path.join(file, "tessera-reactors"), limitBytes: LIMIT_MIB * MIB },
    };
    const error = await ReactorWorker.start(broken, "module.exports = async () => ({});", []).catch(
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(WorkerStartError);
    expect((error as Error).message).toMatch(/^the worker could not be given its memory limit: ENOTDIR/);
  });
});
