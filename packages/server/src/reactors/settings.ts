import type { NpmModule } from "./sandbox/modules.js";

/** The reactor sandbox (docs/reactors.md#the-sandbox). */
export interface ReactorConfig {
  /** Deno's cache and the harness; readable by the unprivileged worker user, so never inside the data dir. */
  readonly dir: string;
  /** Hosts reactor code may reach (`host[:port]`, comma-separated); empty for any public address. */
  readonly egress: string;
  readonly timeoutMs: number;
  readonly maxWorkers: number;
  /** Workers one reactor version may have at once, started while its invocations queue. */
  readonly workersPerReactor: number;
  readonly heapMiB: number;
  /** A worker's memory: polled by the watchdog, and the kernel's cgroup limit where there is one. */
  readonly rssMiB: number;
  /** Whether workers get a memory cgroup where the host allows it (auto) or the watchdog alone (off). */
  readonly cgroup: "auto" | "off";
  /** The npm packages reactor code may require, at exact versions cached at install (TESSERA_REACTOR_MODULES). */
  readonly modules: readonly NpmModule[];
}
