import path from "node:path";
import type { Logger } from "pino";
import type { ReactorConfig } from "./settings.js";
import { describeCgroup } from "./sandbox/cgroup.js";
import type { InvocationOutcome } from "../observability/metrics.js";
import { PoolExhaustedError, ReactorPool, type PoolOutcome, type ReactorCode } from "./sandbox/pool.js";
import { workerLimits } from "./sandbox/setup.js";
import type { Invocation } from "./sandbox/worker.js";
import { pathScrubber } from "./scrub.js";

const FRAME_BYTES = 8 * 1024 * 1024;
const LOG_BYTES = 64 * 1024;
const LOAD_TIMEOUT_MS = 15_000;
const IDLE_MS = 10 * 60_000;
const SPARES = 1;

/** A version of a reactor: an updated reactor never meets its old code's workers. */
export function reactorKey(id: string, version: number): string {
  return `${id}:${version}`;
}

/**
 * The pool's key: a version of a reactor, invoked by one Application. Module state, globals and whatever else a
 * warm worker keeps from one invocation to the next hold what that invocation was given (detokenized arguments),
 * so a worker serves one caller only: another Application, with other rules, never meets it (docs/reactors.md).
 */
export function workerKey(reactorVersion: string, applicationId: string): string {
  return `${reactorVersion}:${applicationId}`;
}

const isVersionOf = (key: string, id: string) => key.startsWith(`${id}:`);

export interface ReactorRuntime {
  invoke(reactor: ReactorCode, invocation: Invocation): Promise<PoolOutcome>;
  /**
   * Stops this instance's workers of every version of a reactor (it was updated or deleted); invocations under
   * way finish first. Other instances stop theirs when idle.
   */
  discard(reactorId: string): Promise<void>;
  /** Process ids of the live workers. */
  pids(): Promise<number[]>;
  /** Workers alive or starting, and how many of them are busy (metrics); zeros before the pool starts. */
  workers(): { readonly size: number; readonly busy: number };
  readonly timeoutMs: number;
  readonly scrub: (text: string) => string;
  close(): Promise<void>;
}

/**
 * The worker pool, started on the first invocation: commands that open the vault without serving (migrate,
 * keys, the OpenAPI generator) never start Deno. Starting it may copy the npm packages' cache once per install
 * (module-cache.ts); a start that fails is tried again on the next invocation. The start logs which memory
 * limit is in force (cgroup.ts): the operator's one way to tell whether the host allowed a cgroup.
 */
export function createReactorRuntime(config: ReactorConfig, log?: Pick<Logger, "info">): ReactorRuntime {
  let pool: Promise<ReactorPool> | undefined;
  /** The pool once started, for the synchronous counts metrics read at scrape time. */
  let running: ReactorPool | undefined;
  const started = () =>
    (pool ??= workerLimits({
      dir: config.dir,
      modules: config.modules,
      egress: config.egress,
      heapMiB: config.heapMiB,
      rssMiB: config.rssMiB,
      cgroup: config.cgroup,
      frameBytes: FRAME_BYTES,
      logBytes: LOG_BYTES,
      loadTimeoutMs: LOAD_TIMEOUT_MS,
    }).then(
      (limits) => {
        log?.info(
          { memoryCgroup: limits.cgroup },
          `reactor workers' memory: ${describeCgroup(limits.cgroup)}`,
        );
        return (running = new ReactorPool({
          limits,
          maxWorkers: config.maxWorkers,
          workersPerReactor: config.workersPerReactor,
          idleMs: IDLE_MS,
          spares: SPARES,
        }));
      },
      (error: unknown) => {
        pool = undefined;
        throw error;
      },
    ));
  const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../../../..");
  return {
    invoke: async (reactor, invocation) => (await started()).invoke(reactor, invocation),
    discard: async (reactorId) => {
      // A pool not started yet has no workers to stop.
      await running?.discard((key) => isVersionOf(key, reactorId));
    },
    pids: async () => (await (await pool?.catch(() => undefined))?.pids()) ?? [],
    workers: () => ({ size: running?.size ?? 0, busy: running?.busy ?? 0 }),
    timeoutMs: config.timeoutMs,
    // The installation root covers node_modules, where the Deno binary and the npm cache live.
    scrub: pathScrubber([config.dir, root]),
    close: async () => (await pool?.catch(() => undefined))?.close(),
  };
}

/** The runtime, telling `observe` each invocation's outcome and cold start on its way through (GET /metrics). */
export function instrumented(
  runtime: ReactorRuntime,
  observe: (outcome: InvocationOutcome, cold: boolean) => void,
): ReactorRuntime {
  return {
    ...runtime,
    async invoke(reactor, invocation) {
      let outcome;
      try {
        outcome = await runtime.invoke(reactor, invocation);
      } catch (error) {
        observe(error instanceof PoolExhaustedError ? "pool-exhausted" : "start-failed", false);
        throw error;
      }
      // `satisfies`: a new kind of outcome in the sandbox must be added to metrics.ts's OUTCOMES.
      observe(outcome.kind satisfies InvocationOutcome, outcome.cold);
      return outcome;
    },
  };
}
