import { removeServerCgroup } from "./cgroup.js";
import { ReactorWorker, type Invocation, type Outcome, type WorkerLimits } from "./worker.js";

export interface PoolOptions {
  readonly limits: WorkerLimits;
  /** Workers alive at once, loaded, loading or spare. */
  readonly maxWorkers: number;
  /** Workers one key (a reactor version and its caller) may have, started while its invocations would wait. */
  readonly workersPerReactor: number;
  /** A loaded worker unused this long is stopped. */
  readonly idleMs: number;
  /** Workers started ahead with no code, so that a reactor's first invocation skips the process start. */
  readonly spares: number;
}

/**
 * What a reactor needs to run: its key, which names the workers it may run on (runtime.ts `workerKey`: the reactor's
 * id and version, so an update never meets old code, and the calling Application, so no caller meets what another
 * left in a worker), and its code.
 */
export interface ReactorCode {
  readonly key: string;
  readonly code: string;
  readonly modules: readonly string[];
}

export type PoolOutcome = Outcome & { readonly cold: boolean };

/** Every worker is busy and the pool is full. */
export class PoolExhaustedError extends Error {
  constructor() {
    super("every reactor worker is busy");
    this.name = "PoolExhaustedError";
  }
}

/** An invocation waiting for a worker of its reactor; `cold` when the worker was loaded for it. */
interface Waiter {
  resolve(lease: { worker: ReactorWorker; cold: boolean }): void;
  reject(error: unknown): void;
}

/** The workers of one key. Each runs one invocation at a time. */
interface Group {
  readonly reactor: ReactorCode;
  /** Loaded and free, least recently used first. */
  readonly idle: ReactorWorker[];
  /** Running an invocation. */
  busy: number;
  /** Taking the code (a spare loading it, or a process starting with it). */
  loading: number;
  /** Invocations waiting for a worker, first come first served. */
  readonly waiting: Waiter[];
  /** Out of the pool (its reactor was updated or deleted, or the pool closed): no worker goes back to it. */
  retired: boolean;
}

const workersOf = (group: Group) => group.idle.length + group.busy + group.loading;

/**
 * Workers per key (docs/reactors.md#why-a-deno-process-per-reactor: tenant code shares its realm with everything in its
 * process, so two reactors, two versions of one, or one version called by two Applications never share a worker). An
 * invocation takes a free worker of its key; when there is none it waits, and the pool starts another worker for the
 * key while it has fewer than `workersPerReactor` and there is room (a spare, or fewer than `maxWorkers` workers):
 * whichever worker is free first serves the longest waiting invocation. A key's first worker may also stop the
 * least recently used idle worker of another key to make room; further ones never do. Idle workers are stopped.
 */
export class ReactorPool {
  readonly #options: PoolOptions;
  /** By key, least recently used first: a used group is moved to the end. */
  readonly #groups = new Map<string, Group>();
  readonly #spares: Promise<ReactorWorker>[] = [];
  /** Workers that belong to a group, loaded or loading: with the spares, what counts against maxWorkers. */
  #assigned = 0;
  /** Loaded workers of every group, busy or idle (for pids and close). */
  readonly #loaded = new Set<ReactorWorker>();
  /** Workers taking their code (for pids and close). */
  readonly #loading = new Set<Promise<ReactorWorker>>();
  readonly #sweeper: NodeJS.Timeout;
  /** Workers stopped and not yet gone, which close() waits for. */
  readonly #stopping = new Set<Promise<void>>();
  #closed = false;
  #refill: NodeJS.Immediate | undefined;

  constructor(options: PoolOptions) {
    this.#options = options;
    this.#sweeper = setInterval(() => this.#evictIdle(), Math.max(50, Math.floor(options.idleMs / 2)));
    this.#sweeper.unref();
    this.#refillSpares();
  }

  /** Workers alive or starting, loaded, loading or spare: never more than maxWorkers. */
  get size(): number {
    return this.#assigned + this.#spares.length;
  }

  /** Workers running an invocation or taking code for one (for metrics). */
  get busy(): number {
    let busy = 0;
    for (const group of this.#groups.values()) busy += group.busy + group.loading;
    return busy;
  }

  /** Process ids of every live worker (for tests and metrics). */
  async pids(): Promise<number[]> {
    const started = await Promise.allSettled([...this.#loading, ...this.#spares]);
    const workers = [...this.#loaded, ...started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []))];
    return workers.flatMap((w) => (w.alive && w.pid ? [w.pid] : []));
  }

  /** Runs one invocation of `reactor`; a worker that dies (time, memory, crash) is replaced when needed. */
  async invoke(reactor: ReactorCode, invocation: Invocation): Promise<PoolOutcome> {
    if (this.#closed) throw new Error("the reactor pool is closed");
    const group = this.#groupOf(reactor);
    const { worker, cold } = await this.#acquire(group);
    try {
      return { ...(await worker.invoke(invocation)), cold };
    } finally {
      this.#release(group, worker);
    }
  }

  /**
   * Stops the workers of the keys `matches` picks (after an update or a delete). Invocations already
   * running or waiting finish on them first.
   */
  async discard(matches: (key: string) => boolean): Promise<void> {
    const stopped: Promise<void>[] = [];
    for (const [key, group] of this.#groups) {
      if (!matches(key)) continue;
      this.#groups.delete(key);
      group.retired = true;
      for (const worker of group.idle.splice(0)) stopped.push(this.#drop(worker));
    }
    this.#refillSoon();
    await Promise.all(stopped);
  }

  /** Stops every worker and waits until they are gone and their memory cgroups removed. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweeper);
    clearImmediate(this.#refill);
    for (const group of this.#groups.values()) {
      group.retired = true;
      for (const waiter of group.waiting.splice(0)) waiter.reject(new Error("the reactor pool is closed"));
    }
    this.#groups.clear();
    const spares = this.#spares.splice(0);
    // A worker that finishes loading now meets a retired group and is stopped there.
    await Promise.allSettled([...this.#loading]);
    const settled = await Promise.allSettled(spares);
    await Promise.all([
      ...settled.map((s) => (s.status === "fulfilled" ? s.value.stop() : undefined)),
      ...[...this.#loaded].map((worker) => worker.stop()),
      ...this.#stopping,
    ]);
    const { cgroup } = this.#options.limits;
    if (cgroup.kind !== "none") await removeServerCgroup(cgroup);
  }

  #groupOf(reactor: ReactorCode): Group {
    let group = this.#groups.get(reactor.key);
    if (group === undefined) {
      group = { reactor, idle: [], busy: 0, loading: 0, waiting: [], retired: false };
    } else this.#groups.delete(reactor.key);
    this.#groups.set(reactor.key, group);
    return group;
  }

  #acquire(group: Group): Promise<{ worker: ReactorWorker; cold: boolean }> {
    for (let worker = group.idle.pop(); worker !== undefined; worker = group.idle.pop()) {
      if (worker.alive) {
        group.busy++;
        return Promise.resolve({ worker, cold: false });
      }
      void this.#drop(worker);
    }
    return new Promise((resolve, reject) => {
      group.waiting.push({ resolve, reject });
      this.#grow(group);
    });
  }

  /**
   * Starts workers for `group` while invocations wait that no loading worker is meant for, within the limits.
   * A group left with no worker for its waiting invocations fails them: the pool is full of busy workers.
   */
  #grow(group: Group): void {
    while (
      group.waiting.length > group.loading &&
      workersOf(group) < this.#options.workersPerReactor &&
      this.#makeRoom(workersOf(group) === 0)
    ) {
      this.#startWorker(group);
    }
    if (workersOf(group) === 0 && group.waiting.length > 0) {
      this.#fail(group, this.#closed ? new Error("the reactor pool is closed") : new PoolExhaustedError());
    }
  }

  /**
   * Whether one more worker fits: a spare can be taken, or the pool is below its maximum, or (`evict`) the least
   * recently used idle worker of another version could be stopped for it.
   */
  #makeRoom(evict: boolean): boolean {
    if (this.#closed) return false;
    if (this.#spares.length > 0 || this.size < this.#options.maxWorkers) return true;
    if (!evict) return false;
    for (const [key, group] of this.#groups) {
      const worker = group.idle.shift();
      if (worker === undefined) continue;
      void this.#drop(worker);
      this.#forgetIfEmpty(key, group);
      return true;
    }
    return false;
  }

  /** Counted from now on; the spare, or a new process, takes the code. */
  #startWorker(group: Group): void {
    const { limits } = this.#options;
    const { code, modules } = group.reactor;
    const start = () => ReactorWorker.start(limits, code, modules);
    const spare = this.#spares.shift();
    this.#assigned++;
    group.loading++;
    const loading =
      spare === undefined
        ? start()
        : spare.then(
            async (worker) => {
              if (!worker.alive) return start();
              await worker.load(code, modules);
              return worker;
            },
            () => start(),
          );
    this.#loading.add(loading);
    loading.then(
      (worker) => {
        this.#loading.delete(loading);
        group.loading--;
        this.#loaded.add(worker);
        // The invocation that takes it starts the next spare when it is over (#release).
        if (!this.#serve(group, worker, true)) this.#refillSoon();
      },
      (error: unknown) => {
        this.#loading.delete(loading);
        group.loading--;
        // The worker is already stopped (load() stops a worker whose code failed).
        this.#assigned--;
        // Others of the group serve the waiting invocations; with none, they get the error: the same code
        // would most likely fail the same way again.
        if (workersOf(group) === 0) this.#fail(group, error);
        this.#refillSoon();
      },
    );
  }

  /**
   * A worker free for `group`: the longest waiting invocation takes it (answers true), else it waits in the
   * group.
   */
  #serve(group: Group, worker: ReactorWorker, cold: boolean): boolean {
    if (!worker.alive) {
      void this.#drop(worker);
      this.#grow(group);
      return false;
    }
    const waiter = group.waiting.shift();
    if (waiter !== undefined) {
      group.busy++;
      waiter.resolve({ worker, cold });
      return true;
    }
    if (group.retired) void this.#drop(worker);
    else group.idle.push(worker);
    return false;
  }

  #release(group: Group, worker: ReactorWorker): void {
    group.busy--;
    this.#serve(group, worker, false);
    this.#refillSoon();
  }

  /** Fails every invocation waiting in `group` and forgets the group if nothing is left in it. */
  #fail(group: Group, error: unknown): void {
    for (const waiter of group.waiting.splice(0)) waiter.reject(error);
    this.#forgetIfEmpty(group.reactor.key, group);
  }

  #forgetIfEmpty(key: string, group: Group): void {
    if (workersOf(group) === 0 && group.waiting.length === 0 && this.#groups.get(key) === group) {
      this.#groups.delete(key);
    }
  }

  /** Takes a loaded worker out of the pool and stops it. */
  #drop(worker: ReactorWorker): Promise<void> {
    if (!this.#loaded.delete(worker)) return Promise.resolve();
    this.#assigned--;
    const stopped = worker.stop();
    this.#stopping.add(stopped);
    void stopped.then(() => this.#stopping.delete(stopped));
    return stopped;
  }

  /**
   * Refills the spares once the current callbacks are done: starting a process blocks the server's event loop
   * (fork() copies the server's page tables: 15–130 ms here, growing with the server's memory), so it waits until
   * the invocation that took a spare has been answered.
   */
  #refillSoon(): void {
    if (this.#refill !== undefined || this.#closed) return;
    this.#refill = setImmediate(() => {
      this.#refill = undefined;
      this.#refillSpares();
    });
  }

  #refillSpares(): void {
    while (
      !this.#closed &&
      this.#spares.length < this.#options.spares &&
      this.size < this.#options.maxWorkers
    ) {
      const spare = ReactorWorker.spawn(this.#options.limits);
      this.#spares.push(spare);
      void spare.catch(() => {
        const index = this.#spares.indexOf(spare);
        if (index !== -1) void this.#spares.splice(index, 1);
      });
    }
  }

  #evictIdle(): void {
    const cutoff = Date.now() - this.#options.idleMs;
    for (const [key, group] of this.#groups) {
      for (const worker of [...group.idle]) {
        if (worker.alive && worker.lastUsed >= cutoff) continue;
        group.idle.splice(group.idle.indexOf(worker), 1);
        void this.#drop(worker);
      }
      this.#forgetIfEmpty(key, group);
    }
    this.#refillSoon();
  }
}
