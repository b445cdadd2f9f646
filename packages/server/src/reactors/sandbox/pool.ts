import { removeServerCgroup } from "./cgroup.js";
import { ReactorWorker, type Invocation, type Outcome, type WorkerLimits } from "./worker.js";

export interface PoolOptions {
  readonly limits: WorkerLimits;
  /** Workers alive at once, loaded or spare. */
  readonly maxWorkers: number;
  /** A loaded worker unused this long is stopped. */
  readonly idleMs: number;
  /** Workers started ahead with no code, so that a reactor's first invocation skips the process start. */
  readonly spares: number;
}

/** What a reactor needs to run: its identity (id and version, so an update never meets old code) and code. */
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

interface Slot {
  worker: Promise<ReactorWorker>;
  /** Invocations of one reactor run one after the other in its worker. */
  queue: Promise<unknown>;
  waiting: number;
}

/**
 * One worker per reactor version (reactor-runtime.md: tenant code shares its realm with everything in its process,
 * so two reactors never share one). Least recently used workers make room for new ones; idle ones are stopped.
 */
export class ReactorPool {
  readonly #options: PoolOptions;
  /** In least-recently-used order: a used slot is moved to the end. */
  readonly #slots = new Map<string, Slot>();
  readonly #spares: Promise<ReactorWorker>[] = [];
  readonly #sweeper: NodeJS.Timeout;
  /** Workers evicted or discarded and not yet gone, which close() waits for. */
  readonly #stopping = new Set<Promise<void>>();
  #closed = false;

  constructor(options: PoolOptions) {
    this.#options = options;
    this.#sweeper = setInterval(() => this.#evictIdle(), Math.max(50, Math.floor(options.idleMs / 2)));
    this.#sweeper.unref();
    this.#refillSpares();
  }

  get size(): number {
    return this.#slots.size + this.#spares.length;
  }

  /** Workers running an invocation or with invocations queued for them (for metrics). */
  get busy(): number {
    let busy = 0;
    for (const slot of this.#slots.values()) if (slot.waiting > 0) busy++;
    return busy;
  }

  /** Process ids of every live worker (for tests and metrics). */
  async pids(): Promise<number[]> {
    const workers = await Promise.allSettled([
      ...[...this.#slots.values()].map((s) => s.worker),
      ...this.#spares,
    ]);
    return workers.flatMap((w) =>
      w.status === "fulfilled" && w.value.alive && w.value.pid ? [w.value.pid] : [],
    );
  }

  /** Runs one invocation of `reactor`; a worker that dies (time, memory, crash) is replaced on the next call. */
  async invoke(reactor: ReactorCode, invocation: Invocation): Promise<PoolOutcome> {
    if (this.#closed) throw new Error("the reactor pool is closed");
    let slot = this.#slots.get(reactor.key);
    let cold = false;
    if (slot === undefined) {
      this.#makeRoom();
      slot = { worker: this.#load(reactor), queue: Promise.resolve(), waiting: 0 };
      cold = true;
    }
    this.#slots.delete(reactor.key);
    this.#slots.set(reactor.key, slot);
    const current = slot;
    current.waiting++;
    const run = current.queue.then(async () => {
      let worker = await current.worker;
      if (!worker.alive) {
        current.worker = this.#load(reactor);
        worker = await current.worker;
        cold = true;
      }
      return { ...(await worker.invoke(invocation)), cold };
    });
    current.queue = run.catch(() => undefined);
    try {
      return await run;
    } catch (error) {
      // A worker that never loaded is not kept: the next call starts afresh.
      if (this.#slots.get(reactor.key) === current) this.#slots.delete(reactor.key);
      throw error;
    } finally {
      current.waiting--;
    }
  }

  /** Stops the worker of a reactor version (after an update or delete). */
  async discard(key: string): Promise<void> {
    const slot = this.#slots.get(key);
    if (slot === undefined) return;
    this.#slots.delete(key);
    const worker = await slot.worker.catch(() => undefined);
    if (worker !== undefined) await this.#stop(worker);
  }

  /** Stops every worker and waits until they are gone and their memory cgroups removed. */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweeper);
    const all = [...[...this.#slots.values()].map((s) => s.worker), ...this.#spares];
    this.#slots.clear();
    this.#spares.length = 0;
    const settled = await Promise.allSettled(all);
    await Promise.all([
      ...settled.map((s) => (s.status === "fulfilled" ? s.value.stop() : undefined)),
      ...this.#stopping,
    ]);
    const { cgroup } = this.#options.limits;
    if (cgroup.kind !== "none") await removeServerCgroup(cgroup);
  }

  #stop(worker: ReactorWorker): Promise<void> {
    const stopped = worker.stop();
    this.#stopping.add(stopped);
    void stopped.then(() => this.#stopping.delete(stopped));
    return stopped;
  }

  #load(reactor: ReactorCode): Promise<ReactorWorker> {
    const spare = this.#spares.shift();
    this.#refillSpares();
    if (spare === undefined) return ReactorWorker.start(this.#options.limits, reactor.code, reactor.modules);
    return spare.then(
      async (worker) => {
        if (!worker.alive) return ReactorWorker.start(this.#options.limits, reactor.code, reactor.modules);
        await worker.load(reactor.code, reactor.modules);
        return worker;
      },
      () => ReactorWorker.start(this.#options.limits, reactor.code, reactor.modules),
    );
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

  /** Stops the least recently used idle worker when the pool is full; refuses when every worker is busy. */
  #makeRoom(): void {
    if (this.#slots.size + this.#spares.length < this.#options.maxWorkers) return;
    if (this.#spares.length > 0) return;
    for (const [key, slot] of this.#slots) {
      if (slot.waiting === 0) {
        this.#slots.delete(key);
        void slot.worker.then(
          (w) => this.#stop(w),
          () => undefined,
        );
        return;
      }
    }
    throw new PoolExhaustedError();
  }

  #evictIdle(): void {
    const cutoff = Date.now() - this.#options.idleMs;
    for (const [key, slot] of this.#slots) {
      if (slot.waiting > 0) continue;
      void slot.worker.then(
        (worker) => {
          if (worker.lastUsed < cutoff && !worker.busy && this.#slots.get(key) === slot) {
            this.#slots.delete(key);
            void this.#stop(worker);
          }
        },
        () => undefined,
      );
    }
  }
}
