import { chmodSync, copyFileSync, lstatSync, mkdirSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { detectCgroup } from "./cgroup.js";
import { workerImportMap } from "./import-map.js";
import { INSTALL_CACHE, prepareWorkerModules } from "./module-cache.js";
import type { NpmModule } from "./modules.js";
import type { WorkerLimits } from "./worker.js";

/**
 * Addresses reactor code may never reach, whatever egress it is allowed (reactor-runtime.md): loopback, the
 * unspecified address, link-local (cloud metadata), the private ranges and carrier-grade NAT. Deno checks these
 * after resolving a name, so DNS aliases of them are refused too. Deno takes no IPv6 ranges: IPv6 private egress
 * has to be blocked by network policy (docs/reactors.md).
 */
export const ALWAYS_DENIED = [
  "127.0.0.0/8",
  "localhost",
  "[::1]",
  "0.0.0.0",
  "[::]",
  "169.254.0.0/16",
  "10.0.0.0/8",
  "172.16.0.0/12",
  "192.168.0.0/16",
  "100.64.0.0/10",
] as const;

/** The unprivileged user workers run as when the server runs as root (`nobody` on Debian). */
const NOBODY = { uid: 65534, gid: 65534 } as const;

const HARNESS = fileURLToPath(new URL("harness.js", import.meta.url));

/** The Deno binary of the platform package the `deno` npm package installs; the `.bin` wrapper costs ~70 ms. */
export function denoBinary(): string {
  const platform =
    process.platform === "linux"
      ? `linux-${process.arch}-glibc`
      : process.platform === "darwin"
        ? `darwin-${process.arch}`
        : undefined;
  if (platform === undefined)
    throw new Error(`reactors need Deno, which has no build for ${process.platform}`);
  const require = createRequire(import.meta.url);
  return path.join(path.dirname(require.resolve(`@deno/${platform}/package.json`)), "deno");
}

/**
 * The host's own addresses: Deno has no separate listen permission, so reactor code must not reach them either.
 * Link-local ones included: `fe80::…%eth0` reaches every service on the host bound to `::`, and Deno matches a
 * denied `[fe80::…]` whatever zone the code appends.
 */
export function hostAddresses(): string[] {
  return Object.values(os.networkInterfaces())
    .flat()
    .flatMap((address) =>
      address === undefined ? [] : [address.family === "IPv6" ? `[${address.address}]` : address.address],
    );
}

export interface SandboxSettings {
  /**
   * TESSERA_REACTOR_DIR: the harness and Deno's cache are copied here so that an unprivileged worker can read
   * them.
   */
  readonly dir: string;
  /** The npm packages reactor code may require (TESSERA_REACTOR_MODULES). */
  readonly modules: readonly NpmModule[];
  /** Where the install step cached them; INSTALL_CACHE unless a test says otherwise. */
  readonly moduleCache?: string;
  /** Hosts (`host[:port]`, comma-separated) reactor code may reach; empty for any public address. */
  readonly egress: string;
  readonly heapMiB: number;
  /** The worker's memory: the watchdog's limit, and the cgroup's where there is one. */
  readonly rssMiB: number;
  /** TESSERA_REACTOR_CGROUP; auto unless said otherwise. */
  readonly cgroup?: "auto" | "off";
  /** Where the cgroup hierarchies are mounted: /sys/fs/cgroup unless a test says otherwise. */
  readonly cgroupRoot?: string;
  readonly frameBytes: number;
  readonly logBytes: number;
  readonly loadTimeoutMs: number;
}

export async function workerLimits(settings: SandboxSettings): Promise<WorkerLimits> {
  mkdirSync(settings.dir, { recursive: true, mode: 0o755 });
  // The default lives under the shared temporary directory: one that someone else created could hand workers
  // a harness or packages of their own.
  const owner = lstatSync(settings.dir);
  if (!owner.isDirectory() || owner.uid !== process.getuid?.() || (owner.mode & 0o022) !== 0) {
    throw new Error(
      `${settings.dir} must be a directory owned by this user and writable by no one else (TESSERA_REACTOR_DIR)`,
    );
  }
  chmodSync(settings.dir, 0o755);
  const harness = path.join(settings.dir, "tessera-harness.js");
  copyFileSync(HARNESS, harness);
  chmodSync(harness, 0o644);
  const modules = await prepareWorkerModules(
    settings.dir,
    settings.modules,
    settings.moduleCache ?? INSTALL_CACHE,
  );
  const importMap = path.join(settings.dir, "tessera-import-map.json");
  writeFileSync(importMap, JSON.stringify(workerImportMap(modules.packages)), { mode: 0o644 });
  chmodSync(importMap, 0o644);
  const root = process.getuid?.() === 0;
  const rssBytes = settings.rssMiB * 2 ** 20;
  const cgroup = await detectCgroup({
    mode: settings.cgroup ?? "auto",
    limitBytes: rssBytes,
    ...(settings.cgroupRoot !== undefined && { root: settings.cgroupRoot }),
  });
  return {
    deno: denoBinary(),
    harness,
    importMap,
    denoDir: modules.denoDir,
    packages: modules.packages,
    missingPackages: modules.missing,
    ...(modules.registry !== undefined && { registry: modules.registry }),
    allowNet: settings.egress,
    denyNet: [...ALWAYS_DENIED, ...hostAddresses()],
    heapMiB: settings.heapMiB,
    rssBytes,
    cgroup,
    frameBytes: settings.frameBytes,
    logBytes: settings.logBytes,
    loadTimeoutMs: settings.loadTimeoutMs,
    ...(root && { runAs: NOBODY }),
  };
}
