import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  PoolExhaustedError,
  ReactorPool,
  type PoolOptions,
  type PoolOutcome,
  type ReactorCode,
} from "./pool.js";
import { workerLimits } from "./setup.js";
import { ReactorWorker, type Invocation, type Outcome, type WorkerLimits } from "./worker.js";

// The sandbox does not touch the store, so it runs in one project only.
const ONCE = process.env.TESSERA_TEST_STORE === "postgres";

/**
 * A reactor that says which reactor and which worker process answered. With `args.hold` it first makes an `svc`
 * call, which the test answers when it chooses: the invocation holds its worker until then.
 */
function reactor(name: string): ReactorCode {
  return {
    key: `${name}:1`,
    code: `
      globalThis.owner ??= ${JSON.stringify(name)};
      module.exports = async ({ args, svc }) => {
        if (args.hold) await svc.tokens.get("held");
        if (args.spin) for (;;) {}
        if (args.ms) await new Promise((resolve) => setTimeout(resolve, args.ms));
        return { raw: { reactor: ${JSON.stringify(name)}, owner: globalThis.owner, pid: Deno.pid } };
      };`,
    modules: [],
  };
}

function invocation(args: Record<string, unknown>, overrides: Partial<Invocation> = {}): Invocation {
  return {
    args,
    configuration: {},
    svc: args.hold === true,
    timeoutMs: 10_000,
    onRpc: () => Promise.reject(new Error("no svc in this test")),
    ...overrides,
  };
}

interface Answer {
  readonly reactor: string;
  readonly owner: string;
  readonly pid: number;
}

function answer(outcome: Outcome): Answer {
  if (outcome.kind !== "returned") throw new Error(`expected a result, got ${JSON.stringify(outcome)}`);
  return outcome.value.raw as Answer;
}

/** CPU time a process has used, in clock ticks (user and system, every thread). */
function cpuTicks(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "latin1").split(") ")[1]!.split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/** Child processes of this test process that are still running (workers are started as direct children). */
function liveChildren(): number[] {
  const children: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const [state, parent] = readFileSync(`/proc/${entry}/stat`, "latin1").split(") ")[1]!.split(" ");
      if (Number(parent) === process.pid && state !== "Z") children.push(Number(entry));
    } catch {
      // Gone between the listing and the read.
    }
  }
  return children;
}

async function until(condition: () => boolean, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return true;
}

function isAlive(pid: number): boolean {
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "latin1"));
  } catch {
    return false;
  }
}

/** A gate for held invocations: counts the `svc` calls that arrived and answers them all on `open()`. */
function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  let arrived = 0;
  return {
    onRpc: async () => {
      arrived++;
      await opened;
      return null;
    },
    arrived: () => arrived,
    open: () => open(),
  };
}

describe.skipIf(ONCE)("reactor worker pool", () => {
  let dir: string;
  let limits: WorkerLimits;
  /**
   * Runs `use` on a pool of its own, closed afterwards: tests count this process's children. Idle workers live a
   * minute unless a test is about their eviction.
   */
  async function withPool(
    options: Omit<PoolOptions, "limits" | "idleMs"> & Partial<Pick<PoolOptions, "idleMs">>,
    use: (pool: ReactorPool) => Promise<void>,
  ): Promise<void> {
    const pool = new ReactorPool({ limits, idleMs: 60_000, ...options });
    try {
      await use(pool);
    } finally {
      await pool.close();
    }
  }

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tessera-pool-"));
    // Workers run as nobody when the tests run as root: the harness must be reachable for them.
    chmodSync(dir, 0o755);
    limits = await workerLimits({
      dir: path.join(dir, "deno"),
      modules: [],
      egress: "",
      heapMiB: 64,
      rssMiB: 192,
      // About the pool, not memory: no cgroup to leave behind (cgroup.test.ts covers it).
      cgroup: "off",
      frameBytes: 1024 * 1024,
      logBytes: 16 * 1024,
      loadTimeoutMs: 15_000,
    });
  });

  afterAll(() => {
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("has a spare start Deno's Node compatibility layer before it gets code: the load costs a fraction of the start", async () => {
    let started = 0;
    let loaded = 0;
    for (let i = 0; i < 3; i++) {
      // spawn() resolves once the harness says it is ready, its node: imports done.
      const worker = await ReactorWorker.spawn(limits);
      try {
        const atReady = cpuTicks(worker.pid!);
        await worker.load(reactor("echo").code, []);
        expect(answer(await worker.invoke(invocation({})))).toMatchObject({ reactor: "echo" });
        started += atReady;
        loaded += cpuTicks(worker.pid!) - atReady;
      } finally {
        await worker.stop();
      }
    }
    // CPU time, not elapsed time, so the machine's load hardly moves it. Measured here: a start of ~150–180 ms,
    // a load and first invocation of 0–10 ms; with the imports made at load they were ~120 and ~60 ms.
    expect(loaded * 4).toBeLessThan(started);
  });

  it("runs concurrent invocations of one reactor on up to workersPerReactor workers, never on another reactor's", async () => {
    await withPool({ maxWorkers: 6, workersPerReactor: 2, spares: 1 }, async (pool) => {
      const [a, b] = [reactor("a"), reactor("b")];
      const held = gate();
      const hold = invocation({ hold: true }, { onRpc: held.onRpc });
      const calls = [
        ...[1, 2, 3].map(() => pool.invoke(a, hold)),
        ...[1, 2, 3].map(() => pool.invoke(b, hold)),
      ];
      // Two workers each, holding an invocation; the third invocation of each waits for one of them.
      expect(await until(() => held.arrived() === 4)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(held.arrived()).toBe(4);
      expect(pool.size).toBeLessThanOrEqual(6);
      held.open();
      const outcomes = await Promise.all(calls);
      const answers = outcomes.map(answer);
      const aPids = new Set(answers.slice(0, 3).map((x) => x.pid));
      const bPids = new Set(answers.slice(3).map((x) => x.pid));
      expect(aPids.size).toBe(2);
      expect(bPids.size).toBe(2);
      expect([...aPids].filter((pid) => bPids.has(pid))).toEqual([]);
      // Each worker only ever had its own reactor's code: the global the code sets at load is its own.
      expect(answers.slice(0, 3)).toEqual(
        answers.slice(0, 3).map((x) => ({ ...x, reactor: "a", owner: "a" })),
      );
      expect(answers.slice(3)).toEqual(answers.slice(3).map((x) => ({ ...x, reactor: "b", owner: "b" })));
      // Two workers were loaded per reactor for invocations waiting for them; the third ran warm.
      expect(outcomes.map((o) => o.cold)).toEqual([true, true, false, true, true, false]);
    });
  });

  it("kills only the worker that ran over its time; the reactor's other worker goes on", async () => {
    await withPool({ maxWorkers: 4, workersPerReactor: 2, spares: 1 }, async (pool) => {
      const spinner = reactor("spinner");
      const first = answer(await pool.invoke(spinner, invocation({})));
      const spinning = pool.invoke(spinner, invocation({ spin: true }, { timeoutMs: 1_000 }));
      // The first worker is busy spinning: this call gets a second one.
      const during = answer(await pool.invoke(spinner, invocation({})));
      expect(during.pid).not.toBe(first.pid);
      expect(await spinning).toMatchObject({ kind: "timed-out", cold: false });
      expect(await until(() => !isAlive(first.pid))).toBe(true);
      expect(isAlive(during.pid)).toBe(true);
      const after = await pool.invoke(spinner, invocation({}));
      expect(after).toMatchObject({ kind: "returned", cold: false });
      expect(answer(after).pid).toBe(during.pid);
    });
  });

  it("fails with PoolExhaustedError when every worker is busy and the pool is full", async () => {
    await withPool({ maxWorkers: 1, workersPerReactor: 2, spares: 0 }, async (pool) => {
      const held = gate();
      const holding = pool.invoke(reactor("x"), invocation({ hold: true }, { onRpc: held.onRpc }));
      expect(await until(() => held.arrived() === 1)).toBe(true);
      await expect(pool.invoke(reactor("y"), invocation({}))).rejects.toThrow(PoolExhaustedError);
      // The same reactor waits for its worker rather than failing.
      const waiting = pool.invoke(reactor("x"), invocation({}));
      held.open();
      expect(answer(await holding).reactor).toBe("x");
      expect(await waiting).toMatchObject({ kind: "returned", cold: false });
    });
  });

  it("discards a reactor's workers: idle ones at once, busy ones when their invocation is over", async () => {
    await withPool({ maxWorkers: 6, workersPerReactor: 2, spares: 1 }, async (pool) => {
      const [old, other] = [reactor("old"), reactor("other")];
      const idle = answer(await pool.invoke(old, invocation({})));
      const kept = answer(await pool.invoke(other, invocation({})));
      const held = gate();
      const busy = pool.invoke(old, invocation({ hold: true }, { onRpc: held.onRpc }));
      const second = pool.invoke(old, invocation({ hold: true }, { onRpc: held.onRpc }));
      expect(await until(() => held.arrived() === 2)).toBe(true);
      const sizeBefore = pool.size;
      await pool.discard((key) => key === old.key);
      held.open();
      const [first, next] = (await Promise.all([busy, second])).map(answer);
      expect([first!.pid, next!.pid]).toContain(idle.pid);
      for (const pid of [first!.pid, next!.pid]) expect(await until(() => !isAlive(pid))).toBe(true);
      expect(pool.size).toBeLessThanOrEqual(sizeBefore - 2 + 1);
      expect(isAlive(kept.pid)).toBe(true);
      // The next invocation loads the code afresh.
      expect(await pool.invoke(old, invocation({}))).toMatchObject({ kind: "returned", cold: true });
    });
  });

  it("never holds more than maxWorkers, with a spare and a full pool (it used to settle at maxWorkers + 1)", async () => {
    await withPool({ maxWorkers: 2, workersPerReactor: 1, spares: 1 }, async (pool) => {
      for (const name of ["p", "q", "r", "p"]) {
        expect(answer(await pool.invoke(reactor(name), invocation({}))).reactor).toBe(name);
        expect(pool.size).toBeLessThanOrEqual(2);
      }
      // Once the processes that were stopped are gone, what runs is what the pool counts.
      expect(await until(() => liveChildren().length === pool.size)).toBe(true);
      expect(liveChildren()).toHaveLength(2);
    });
  });

  it("stops a loaded worker left unused for idleMs and keeps one used more recently", async () => {
    await withPool({ maxWorkers: 4, workersPerReactor: 1, spares: 0, idleMs: 2_000 }, async (pool) => {
      const stale = answer(await pool.invoke(reactor("stale"), invocation({})));
      const fresh = reactor("fresh");
      const kept = answer(await pool.invoke(fresh, invocation({})));
      // fresh is used every ~100 ms, a twentieth of idleMs, while stale waits for a sweep to find it idle.
      const freshOutcomes: PoolOutcome[] = [];
      await expect
        .poll(
          async () => {
            freshOutcomes.push(await pool.invoke(fresh, invocation({})));
            return isAlive(stale.pid);
          },
          { timeout: 15_000, interval: 100 },
        )
        .toBe(false);
      expect(freshOutcomes.map((o) => ({ cold: o.cold, pid: answer(o).pid }))).toEqual(
        freshOutcomes.map(() => ({ cold: false, pid: kept.pid })),
      );
      expect(await pool.pids()).toEqual([kept.pid]);
      expect(pool.size).toBe(1);
    });
  });

  it("makes room for another reactor by stopping the least recently used idle worker, not the first loaded", async () => {
    await withPool({ maxWorkers: 2, workersPerReactor: 1, spares: 0 }, async (pool) => {
      const [p, q, r] = [reactor("p"), reactor("q"), reactor("r")];
      const firstP = answer(await pool.invoke(p, invocation({})));
      const firstQ = answer(await pool.invoke(q, invocation({})));
      // p is used again after q was loaded: q is now the least recently used.
      expect(await pool.invoke(p, invocation({}))).toMatchObject({ kind: "returned", cold: false });
      const loadedR = await pool.invoke(r, invocation({}));
      expect(loadedR).toMatchObject({ kind: "returned", cold: true });
      await expect.poll(() => isAlive(firstQ.pid), { timeout: 10_000 }).toBe(false);
      expect(new Set(await pool.pids())).toEqual(new Set([firstP.pid, answer(loadedR).pid]));
      const againP = await pool.invoke(p, invocation({}));
      expect(againP).toMatchObject({ kind: "returned", cold: false });
      expect(answer(againP).pid).toBe(firstP.pid);
    });
  });

  it("never holds more than maxWorkers whatever invocations arrive together (property)", async () => {
    const batch = fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 5 });
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          maxWorkers: fc.integer({ min: 1, max: 4 }),
          workersPerReactor: fc.integer({ min: 1, max: 3 }),
          spares: fc.integer({ min: 0, max: 1 }),
          batches: fc.array(batch, { minLength: 1, maxLength: 3 }),
        }),
        async ({ batches, ...options }) => {
          const pool = new ReactorPool({ limits, idleMs: 60_000, ...options });
          let most = pool.size;
          const watch = setInterval(() => (most = Math.max(most, pool.size)), 1);
          try {
            for (const reactors of batches) {
              const settled = await Promise.allSettled(
                reactors.map((r) => pool.invoke(reactor(`r${r}`), invocation({ ms: 20 }))),
              );
              for (const [i, outcome] of settled.entries()) {
                if (outcome.status === "fulfilled")
                  expect(answer(outcome.value).reactor).toBe(`r${reactors[i]}`);
                else expect(outcome.reason).toBeInstanceOf(PoolExhaustedError);
              }
              most = Math.max(most, pool.size);
              expect(await until(() => liveChildren().length === pool.size)).toBe(true);
            }
            expect(most).toBeLessThanOrEqual(options.maxWorkers);
          } finally {
            clearInterval(watch);
            await pool.close();
          }
          expect(liveChildren()).toEqual([]);
        },
      ),
      { numRuns: 8 },
    );
  }, 120_000);
});
