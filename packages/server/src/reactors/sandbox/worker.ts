import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { oomKilled, placeWorker, removeWorkerCgroup, type MemoryCgroup } from "./cgroup.js";
import { BUILTIN_MODULES, ERROR_MODULES } from "./modules.js";
import { parseFrame, type HostFrame, type ThrownByReactor, type WorkerFrame } from "./frames.js";

/** How workers are started and bounded; one set per pool (setup.ts builds it). */
export interface WorkerLimits {
  readonly deno: string;
  readonly harness: string;
  /** What `import()` in reactor code resolves to (import-map.ts). */
  readonly importMap: string;
  readonly denoDir: string;
  /** The npm packages reactor code may require: name → the specifier the harness imports from DENO_DIR. */
  readonly packages: Readonly<Record<string, string>>;
  /** Packages the server offers but the install cache lacks (module-cache.ts). */
  readonly missingPackages: readonly string[];
  /** The npm registry the cache was built from, when not npm's own: Deno looks packages up under its name. */
  readonly registry?: string;
  /**
   * Linux: the C library the harness calls to remove IPv6 sockets from its process before any reactor code runs
   * (harness.js `networkFilter`), the one file the worker may load with FFI until it revokes that permission.
   */
  readonly libc?: string;
  /** `--allow-net` value: empty for any public address, else a comma-separated allow-list. */
  readonly allowNet: string;
  readonly denyNet: readonly string[];
  readonly heapMiB: number;
  /** The watchdog's limit on the worker's resident memory. */
  readonly rssBytes: number;
  /** The kernel's limit on the worker's memory, where the host allows one (cgroup.ts). */
  readonly cgroup: MemoryCgroup;
  /** Largest frame (a result, an RPC call) a worker may send. */
  readonly frameBytes: number;
  /** Log text kept per invocation; the rest is dropped and counted. */
  readonly logBytes: number;
  readonly loadTimeoutMs: number;
  /** Set when the server runs as root: workers then run as this unprivileged user. */
  readonly runAs?: { readonly uid: number; readonly gid: number };
}

export interface ReactorLog {
  readonly level: string;
  readonly text: string;
}

export type Outcome =
  | { kind: "returned"; value: { raw?: unknown; tokenize?: unknown }; logs: ReactorLog[] }
  | { kind: "threw"; error: ThrownByReactor; logs: ReactorLog[] }
  | { kind: "timed-out"; logs: ReactorLog[] }
  | { kind: "crashed"; reason: string; logs: ReactorLog[] };

export interface Invocation {
  readonly args: unknown;
  readonly configuration: Record<string, string>;
  /** Whether reactor code gets an `svc` client (the reactor has an Application). */
  readonly svc: boolean;
  readonly timeoutMs: number;
  /** Performs one `svc` call as the reactor's Application. */
  readonly onRpc: (method: string, params: unknown[]) => Promise<unknown>;
}

/** Reactor code could not be loaded: it threw, or does not export a function. */
export class ReactorLoadError extends Error {
  constructor(readonly thrown: ThrownByReactor) {
    super(thrown.message);
    this.name = "ReactorLoadError";
  }
}

/** The worker died or misbehaved while loading (crash, memory, time). */
export class WorkerStartError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "WorkerStartError";
  }
}

const RSS_POLL_MS = 20;

/**
 * One Deno process running one reactor's code, one invocation at a time. The host enforces every limit from
 * outside: time (SIGKILL), memory (RSS polled from /proc, and a cgroup limit where the host allows one), output
 * (frame and log sizes). After any of them the worker is dead and the pool starts a new one on the next use.
 */
export class ReactorWorker {
  readonly #child: ChildProcessWithoutNullStreams;
  readonly #limits: WorkerLimits;
  readonly #nonce = randomBytes(24).toString("base64url");
  #pending = "";
  #dead: string | undefined;
  #nextInvocation = 0;
  #onFrame: ((frame: WorkerFrame) => void) | undefined;
  #onDeath: ((reason: string) => void) | undefined;
  #busy = false;
  /** The worker's own memory cgroup, removed once the process is gone. */
  #cgroup: string | undefined;
  /** Settles when the process is gone and its cgroup removed. */
  readonly #gone: Promise<void>;
  lastUsed = Date.now();

  private constructor(limits: WorkerLimits) {
    this.#limits = limits;
    const [command, ...args] = workerCommand(limits);
    this.#child = spawn(command!, args, {
      cwd: "/",
      env: {
        DENO_DIR: limits.denoDir,
        NO_COLOR: "1",
        DENO_NO_UPDATE_CHECK: "1",
        ...(limits.registry !== undefined && { NPM_CONFIG_REGISTRY: limits.registry }),
      },
      stdio: ["pipe", "pipe", "pipe"],
    });
    this.#child.stdout.setEncoding("utf8");
    this.#child.stdout.on("data", (chunk: string) => this.#read(chunk));
    // Deno's own messages (an uncaught error, an OOM abort) may quote reactor data: read and dropped, never logged.
    this.#child.stderr.resume();
    this.#child.stdin.on("error", () => this.#die("the worker closed its input"));
    this.#child.on("error", (error) => this.#die(`the worker could not be started: ${error.message}`));
    this.#gone = new Promise<void>((resolve) => {
      this.#child.once("exit", (code, signal) => {
        this.#die(this.#exitReason(code, signal));
        void this.#removeCgroup().then(resolve);
      });
      this.#child.once("error", () => {
        if (this.#child.pid === undefined) resolve();
      });
    });
    // Synchronously after the spawn: the harness does nothing until the nonce and then the code arrive.
    if (limits.cgroup.kind !== "none" && this.#child.pid !== undefined) {
      try {
        this.#cgroup = placeWorker(limits.cgroup, this.#child.pid);
      } catch (error) {
        this.#die(`the worker could not be given its memory limit: ${(error as Error).message}`);
      }
    }
    if (this.#dead === undefined) this.#write(this.#nonce);
  }

  /**
   * Starts a worker with no code yet (a pool's spare). Resolves once the harness says it is ready, Deno's Node
   * compatibility layer loaded: the load of a reactor's code into it then costs little more than compiling it.
   */
  static async spawn(limits: WorkerLimits): Promise<ReactorWorker> {
    const worker = new ReactorWorker(limits);
    const failure = await worker.#watch<WorkerStartError | undefined>(limits.loadTimeoutMs, (settle) => {
      worker.#onFrame = (frame) => {
        if (frame.t === "ready") settle(undefined);
      };
      return {
        timeout: () => new WorkerStartError("the worker took too long to start"),
        death: (reason) => new WorkerStartError(reason),
      };
    });
    worker.#onFrame = undefined;
    if (failure !== undefined) {
      await worker.stop();
      throw failure;
    }
    return worker;
  }

  /**
   * Starts a worker and loads `code` in it, sending the code without waiting for the harness to be ready (it
   * reads frames in order); rejects with ReactorLoadError when the code itself fails.
   */
  static async start(limits: WorkerLimits, code: string, modules: readonly string[]): Promise<ReactorWorker> {
    const worker = new ReactorWorker(limits);
    await worker.load(code, modules);
    return worker;
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get alive(): boolean {
    return this.#dead === undefined;
  }

  get busy(): boolean {
    return this.#busy;
  }

  kill(): void {
    this.#die("stopped by the host");
  }

  /** Kills the worker and settles once its process is gone and its cgroup removed. */
  async stop(): Promise<void> {
    this.kill();
    await this.#gone;
  }

  /** The worker's memory cgroup directory, when it has one. */
  get cgroup(): string | undefined {
    return this.#cgroup;
  }

  async invoke(invocation: Invocation): Promise<Outcome> {
    if (this.#dead !== undefined) throw new Error(`worker is dead: ${this.#dead}`);
    if (this.#busy) throw new Error("worker is busy");
    this.#busy = true;
    const id = ++this.#nextInvocation;
    const logs: ReactorLog[] = [];
    let logBytes = 0;
    try {
      return await this.#watch(invocation.timeoutMs, (settle) => {
        this.#onFrame = (frame) => {
          switch (frame.t) {
            case "result":
              if (frame.invocation !== id) return;
              settle(
                frame.ok
                  ? { kind: "returned", value: frame.value, logs }
                  : { kind: "threw", error: frame.error, logs },
              );
              return;
            case "log":
              logBytes += frame.text.length;
              if (logBytes <= this.#limits.logBytes) logs.push({ level: frame.level, text: frame.text });
              return;
            case "rpc":
              if (frame.invocation === id)
                this.#answer(frame.call, invocation.onRpc(frame.method, frame.params));
              return;
            case "ready":
            case "loaded":
            case "load-error":
              return;
          }
        };
        this.#send({
          t: "invoke",
          invocation: id,
          args: invocation.args,
          configuration: invocation.configuration,
          svc: invocation.svc,
        });
        return {
          timeout: () => ({ kind: "timed-out", logs }),
          death: (reason) => ({ kind: "crashed", reason, logs }),
        };
      });
    } finally {
      this.#onFrame = undefined;
      this.#busy = false;
      this.lastUsed = Date.now();
    }
  }

  /**
   * Loads a reactor's code; a worker whose code fails to load is stopped (it holds nothing worth keeping) before
   * the error is thrown.
   */
  async load(code: string, modules: readonly string[]): Promise<void> {
    let packages: Record<string, string>;
    try {
      packages = packagesFor(modules, this.#limits);
    } catch (error) {
      await this.stop();
      throw error;
    }
    const outcome = await this.#watch<Error | undefined>(this.#limits.loadTimeoutMs, (settle) => {
      this.#onFrame = (frame) => {
        if (frame.t === "loaded") settle(undefined);
        else if (frame.t === "load-error") settle(new ReactorLoadError(frame.error));
      };
      this.#send({ t: "load", code, modules, packages });
      return {
        timeout: () => new WorkerStartError("the reactor took too long to load"),
        death: (reason) => new WorkerStartError(reason),
      };
    });
    this.#onFrame = undefined;
    if (outcome !== undefined) {
      await this.stop();
      throw outcome;
    }
  }

  /**
   * Runs one exchange under the time and memory limits. `begin` installs the frame handler, sends, and says what
   * the outcome is when time runs out or the worker dies; either of those kills the worker.
   */
  #watch<T>(
    timeoutMs: number,
    begin: (settle: (outcome: T) => void) => { timeout: () => T; death: (reason: string) => T },
  ): Promise<T> {
    return new Promise<T>((resolve) => {
      let settled = false;
      const settle = (outcome: T) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        clearInterval(watchdog);
        this.#onDeath = undefined;
        resolve(outcome);
      };
      const ends = begin(settle);
      const timer = setTimeout(() => {
        settle(ends.timeout());
        this.kill();
      }, timeoutMs);
      const watchdog = setInterval(() => {
        const rss = this.#rss();
        if (rss !== undefined && rss > this.#limits.rssBytes) {
          this.#die(
            `the reactor used more than ${Math.round(this.#limits.rssBytes / 2 ** 20)} MiB of memory`,
          );
        }
      }, RSS_POLL_MS);
      this.#onDeath = (reason) => settle(ends.death(reason));
      if (this.#dead !== undefined) settle(ends.death(this.#dead));
    });
  }

  #answer(call: number, result: Promise<unknown>): void {
    result.then(
      (value) => this.#send({ t: "rpc-result", call, ok: true, value }),
      (error: unknown) => this.#send({ t: "rpc-result", call, ok: false, error: rpcError(error) }),
    );
  }

  #read(chunk: string): void {
    this.#pending += chunk;
    for (let newline = this.#pending.indexOf("\n"); newline !== -1; newline = this.#pending.indexOf("\n")) {
      const line = this.#pending.slice(0, newline);
      this.#pending = this.#pending.slice(newline + 1);
      const frame = parseFrame(line, this.#nonce);
      if (frame !== undefined) this.#onFrame?.(frame);
    }
    if (this.#pending.length > this.#limits.frameBytes) {
      this.#die(`the reactor's output exceeded ${this.#limits.frameBytes} bytes`);
    }
  }

  #send(frame: HostFrame): void {
    if (this.#dead === undefined) this.#write(JSON.stringify(frame));
  }

  #write(line: string): void {
    this.#child.stdin.write(`${line}\n`);
  }

  #rss(): number | undefined {
    if (this.#child.pid === undefined) return undefined;
    try {
      const status = readFileSync(`/proc/${this.#child.pid}/status`, "latin1");
      const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
      return match === null ? undefined : Number(match[1]) * 1024;
    } catch {
      return undefined;
    }
  }

  /** Read before the cgroup is removed: an OOM kill by the kernel looks like any other SIGKILL. */
  #exitReason(code: number | null, signal: NodeJS.Signals | null): string {
    const { cgroup } = this.#limits;
    if (
      signal === "SIGKILL" &&
      cgroup.kind !== "none" &&
      this.#cgroup !== undefined &&
      oomKilled(cgroup, this.#cgroup)
    ) {
      return `the reactor ran out of memory (its limit is ${Math.round(cgroup.limitBytes / 2 ** 20)} MiB)`;
    }
    return exitReason(code, signal);
  }

  async #removeCgroup(): Promise<void> {
    if (this.#cgroup !== undefined) await removeWorkerCgroup(this.#cgroup);
  }

  #die(reason: string): void {
    if (this.#dead !== undefined) return;
    this.#dead = reason;
    this.#pending = "";
    if (this.#child.exitCode === null && this.#child.signalCode === null) this.#child.kill("SIGKILL");
    this.#onDeath?.(reason);
  }
}

/**
 * On Linux, setpriv makes the kernel kill the worker when the server dies (restored after the credential change,
 * which clears it) and drops root; prlimit turns core dumps off (a dump would hold card data). Elsewhere (a
 * developer's Mac) Deno runs directly and exits when its stdin closes with the server, except while it is
 * spinning in reactor code.
 */
function workerCommand(limits: WorkerLimits): string[] {
  const user =
    limits.runAs === undefined
      ? []
      : [`--reuid=${limits.runAs.uid}`, `--regid=${limits.runAs.gid}`, "--clear-groups"];
  const wrapper =
    process.platform === "linux"
      ? ["setpriv", "--pdeathsig", "KILL", ...user, "prlimit", "--core=0", "--"]
      : [];
  return [
    ...wrapper,
    limits.deno,
    "run",
    "--no-config",
    "--no-lock",
    "--no-prompt",
    "--no-remote",
    "--cached-only",
    "--ignore-env",
    `--import-map=${limits.importMap}`,
    `--v8-flags=--max-old-space-size=${limits.heapMiB}`,
    limits.allowNet === "" ? "--allow-net" : `--allow-net=${limits.allowNet}`,
    `--deny-net=${limits.denyNet.join(",")}`,
    ...(limits.libc === undefined ? [] : [`--allow-ffi=${limits.libc}`]),
    limits.harness,
    // The harness's one argument (readable by reactor code, and no secret): where the C library is.
    ...(limits.libc === undefined ? [] : [limits.libc]),
  ];
}

/**
 * The npm packages among `modules`, with the specifier to import each from. The code check accepted the names
 * against the server's list when the code was saved; a package removed from the list since, or missing from the
 * install cache, is refused here, before Deno would look for it.
 */
function packagesFor(modules: readonly string[], limits: WorkerLimits): Record<string, string> {
  const packages: Record<string, string> = {};
  for (const name of modules) {
    if (isBuiltinOrErrorModule(name)) continue;
    const specifier = Object.hasOwn(limits.packages, name) ? limits.packages[name] : undefined;
    if (specifier !== undefined) packages[name] = specifier;
    else if (limits.missingPackages.includes(name)) {
      throw new ReactorLoadError({
        name: "Error",
        message: `The module '${name}' is missing from this server's package cache`,
      });
    } else throw new ReactorLoadError({ name: "Error", message: `'${name}' is not an allowed module` });
  }
  return packages;
}

function isBuiltinOrErrorModule(name: string): boolean {
  return (
    (ERROR_MODULES as readonly string[]).includes(name) ||
    (BUILTIN_MODULES as readonly string[]).includes(name.replace(/^node:/, ""))
  );
}

/** The harness's exit status when it could not install its network filter (harness.js). */
const NO_NETWORK_FILTER = 86;

function exitReason(code: number | null, signal: NodeJS.Signals | null): string {
  if (code === NO_NETWORK_FILTER) {
    return "the worker could not take IPv6 away from reactor code (a seccomp filter, on Linux)";
  }
  if (signal === "SIGKILL") return "the reactor's worker was killed";
  // V8 stops the process with a trap (or an abort) when the heap limit is reached, its most common fatal error.
  if (signal === "SIGTRAP" || signal === "SIGABRT") return "the reactor ran out of memory or crashed";
  if (signal !== null) return `the reactor's worker stopped on ${signal}`;
  return `the reactor's worker exited with status ${code}`;
}

function rpcError(error: unknown): {
  message: string;
  name?: string;
  status?: number;
  errors?: unknown;
  data?: unknown;
} {
  if (typeof error === "object" && error !== null) {
    const { message, name, status, errors, data } = error as Record<string, unknown>;
    return {
      message: typeof message === "string" ? message : "the call failed",
      // `bt` calls fail as basis-theory-js's BasisTheoryApiError (bt-client.ts); other errors keep Error's name.
      ...(name === "BasisTheoryApiError" && { name }),
      ...(typeof status === "number" && { status }),
      ...(errors !== undefined && { errors }),
      ...(data !== undefined && { data }),
    };
  }
  return { message: "the call failed" };
}
