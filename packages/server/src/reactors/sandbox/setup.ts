import { createHash, randomBytes } from "node:crypto";
import { chmodSync, lstatSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { detectCgroup } from "./cgroup.js";
import { IPV4_SPECIAL_RANGES, IPV6_SPECIAL_RANGES } from "../../net/special-ranges.js";
import { workerImportMap } from "./import-map.js";
import { INSTALL_CACHE, prepareWorkerModules } from "./module-cache.js";
import type { NpmModule } from "./modules.js";
import type { WorkerLimits } from "./worker.js";

/**
 * What Deno's `--deny-net` refuses reactor code, whatever egress it is allowed: every IPv4 special-purpose range
 * (net/special-ranges.ts, the list webhooks use too) as CIDR, which Deno matches after resolving a name, so DNS
 * aliases are refused as well; `localhost`; the IPv6 special-purpose single addresses (`[::1]`, `[::]`, ...).
 * Deno takes no IPv6 ranges, so IPv6 is taken away from workers whole instead (harness.js, `networkFilter`).
 */
export function deniedDestinations(): string[] {
  return [
    ...IPV4_SPECIAL_RANGES.map((range) => range.cidr),
    "localhost",
    ...IPV6_SPECIAL_RANGES.filter((range) => range.cidr.endsWith("/128")).map(
      (range) => `[${range.cidr.slice(0, -"/128".length)}]`,
    ),
  ];
}

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
 * The C library the server runs on, which the worker's harness calls (once, before any reactor code) to take IPv6
 * sockets away from its process (harness.js `networkFilter`). Deno's Linux builds link the same glibc as Node's.
 */
function cLibrary(): string {
  const mapped = /\s(\/\S*\/libc\.so\.6)$/m.exec(readFileSync("/proc/self/maps", "utf8"))?.[1];
  if (mapped === undefined) {
    throw new Error("reactors need glibc's libc.so.6 to restrict their workers' network, and none is loaded");
  }
  return mapped;
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

/**
 * Writes `content` into the reactor directory under a name derived from it, readable by the worker user, and
 * answers its path. Servers of different versions (or with other npm packages) may share the directory; each
 * then runs its workers with its own harness and import map, which must agree with each other. The file appears
 * whole (written aside, then renamed), so a worker never reads half of it.
 */
function writeShared(dir: string, name: string, extension: string, content: Buffer): string {
  const hash = createHash("sha256").update(content).digest("hex").slice(0, 16);
  const target = path.join(dir, `${name}-${hash}${extension}`);
  const aside = `${target}.${process.pid}-${randomBytes(6).toString("hex")}`;
  writeFileSync(aside, content, { mode: 0o644 });
  chmodSync(aside, 0o644);
  renameSync(aside, target);
  return target;
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
  const harness = writeShared(settings.dir, "tessera-harness", ".js", readFileSync(HARNESS));
  const modules = await prepareWorkerModules(
    settings.dir,
    settings.modules,
    settings.moduleCache ?? INSTALL_CACHE,
  );
  const importMap = writeShared(
    settings.dir,
    "tessera-import-map",
    ".json",
    Buffer.from(JSON.stringify(workerImportMap(modules.packages))),
  );
  const libc = process.platform === "linux" ? cLibrary() : undefined;
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
    denyNet: [...deniedDestinations(), ...hostAddresses()],
    ...(libc !== undefined && { libc }),
    heapMiB: settings.heapMiB,
    rssBytes,
    cgroup,
    frameBytes: settings.frameBytes,
    logBytes: settings.logBytes,
    loadTimeoutMs: settings.loadTimeoutMs,
    ...(root && { runAs: NOBODY }),
  };
}
