import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { chmod, cp, lstat, readdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { npmSpecifier, type NpmModule } from "./modules.js";

/**
 * Where the install step (src/cache-reactor-modules.ts, run by `npm ci`) caches the allow-listed npm packages:
 * under node_modules, so that a fresh install rebuilds it and git, ESLint and Prettier leave it alone.
 */
export const INSTALL_CACHE = fileURLToPath(
  new URL("../../../node_modules/.cache/tessera-reactor-modules", import.meta.url),
);

/** Written last by the install step: a cache without it is incomplete and counts as missing. */
const MANIFEST = "manifest.json";
const CACHE_TIMEOUT_MS = 5 * 60_000;

interface Manifest {
  /** The Deno version that built the cache (its layout is Deno's). */
  readonly deno: string;
  /** The npm registry the packages came from, when not npm's own: workers must ask Deno for the same one. */
  readonly registry?: string;
  /** `name@version`, each cached with its dependencies. */
  readonly modules: readonly string[];
}

const idOf = (module: NpmModule) => `${module.name}@${module.version}`;

function readManifest(cacheDir: string): Manifest | undefined {
  try {
    const manifest = JSON.parse(readFileSync(path.join(cacheDir, MANIFEST), "utf8")) as Partial<Manifest>;
    if (typeof manifest.deno !== "string" || !Array.isArray(manifest.modules)) return undefined;
    return manifest as Manifest;
  } catch {
    return undefined;
  }
}

export interface InstallCacheRequest {
  readonly deno: string;
  readonly denoVersion: string;
  readonly modules: readonly NpmModule[];
  /** An npm registry other than https://registry.npmjs.org/, as npm's own configuration names it. */
  readonly registry?: string;
  readonly cacheDir: string;
}

/** Whether the install cache holds exactly these packages, built by this Deno from this registry. */
export function isInstallCacheCurrent(request: InstallCacheRequest): boolean {
  const manifest = readManifest(request.cacheDir);
  return (
    manifest !== undefined &&
    manifest.deno === request.denoVersion &&
    manifest.registry === request.registry &&
    JSON.stringify(manifest.modules) === JSON.stringify(request.modules.map(idOf))
  );
}

/**
 * `deno cache` of every package into a fresh Deno directory that replaces the old cache once complete, so a
 * failed or interrupted install never leaves a half cache that looks whole. Deno runs no install scripts.
 * The cache is made readable by everyone: Deno keeps the modes of the packages' tarballs, some of which hold
 * 0640 files, and a server running as another user than the installer copies it (prepareWorkerModules).
 */
export async function buildInstallCache(request: InstallCacheRequest): Promise<void> {
  const building = `${request.cacheDir}.tmp-${process.pid}`;
  rmSync(building, { recursive: true, force: true });
  mkdirSync(building, { recursive: true });
  try {
    if (request.modules.length > 0) await denoCache(request, path.join(building, "deno"));
    const manifest: Manifest = {
      deno: request.denoVersion,
      ...(request.registry !== undefined && { registry: request.registry }),
      modules: request.modules.map(idOf),
    };
    writeFileSync(path.join(building, MANIFEST), `${JSON.stringify(manifest, null, 2)}\n`);
    await makeReadable(building);
    rmSync(request.cacheDir, { recursive: true, force: true });
    renameSync(building, request.cacheDir);
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
}

function denoCache(request: InstallCacheRequest, denoDir: string): Promise<void> {
  const child = spawn(
    request.deno,
    ["cache", "--no-config", "--no-lock", "--quiet", ...request.modules.map(npmSpecifier)],
    {
      // The installer's environment, as npm gives it to install scripts: proxies, extra CA certificates
      // (NODE_EXTRA_CA_CERTS, DENO_TLS_CA_STORE) and registry tokens apply to Deno as they did to npm.
      env: {
        ...process.env,
        DENO_DIR: denoDir,
        NO_COLOR: "1",
        DENO_NO_UPDATE_CHECK: "1",
        ...(request.registry !== undefined && { NPM_CONFIG_REGISTRY: request.registry }),
      },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill("SIGKILL"), CACHE_TIMEOUT_MS);
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`deno cache failed (${signal ?? `status ${code}`}):\n${stderr.trim()}`));
    });
  });
}

/** What workers get from the install cache. */
export interface WorkerModules {
  /** The workers' DENO_DIR. */
  readonly denoDir: string;
  /** Configured packages the cache holds: name → the specifier the harness imports. */
  readonly packages: Readonly<Record<string, string>>;
  /** Configured packages the cache lacks: reactors requiring them fail to load with a clear error. */
  readonly missing: readonly string[];
  readonly registry?: string;
}

/**
 * Copies the install cache into the reactor directory, which the unprivileged worker user can read (the
 * installation may sit under a home directory it cannot enter). The copy is named after the manifest and
 * renamed into place complete, so servers sharing the directory never see a half-written one and never rewrite
 * one that workers are reading. It happens once per install (a few MB), without blocking the server.
 */
export async function prepareWorkerModules(
  reactorDir: string,
  modules: readonly NpmModule[],
  cacheDir: string,
): Promise<WorkerModules> {
  const manifest = readManifest(cacheDir);
  const cached = new Set(manifest?.modules);
  const present = modules.filter((m) => cached.has(idOf(m)));
  const missing = modules.filter((m) => !cached.has(idOf(m))).map((m) => m.name);
  if (manifest === undefined || present.length === 0) return { denoDir: reactorDir, packages: {}, missing };

  const stamp = createHash("sha256").update(JSON.stringify(manifest)).digest("hex").slice(0, 16);
  const denoDir = path.join(reactorDir, `deno-${stamp}`);
  if (!existsSync(denoDir)) {
    const copying = path.join(reactorDir, `.deno-${stamp}-${randomBytes(6).toString("hex")}`);
    try {
      await cp(path.join(cacheDir, "deno", "npm"), path.join(copying, "npm"), { recursive: true });
      await makeReadable(copying);
      await rename(copying, denoDir);
    } catch (error) {
      // Another server sharing the directory may have put the same copy in place first.
      if (!existsSync(denoDir)) throw error;
    } finally {
      await rm(copying, { recursive: true, force: true });
    }
  }
  return {
    denoDir,
    packages: Object.fromEntries(present.map((m) => [m.name, npmSpecifier(m)])),
    missing,
    ...(manifest.registry !== undefined && { registry: manifest.registry }),
  };
}

/**
 * `chmod -R a+rX,go-w,ugo-st`: readable by everyone (directories searchable, executables executable by all),
 * writable by the owner only, whatever umask the install ran under and whatever modes the tarballs had.
 */
async function makeReadable(target: string): Promise<void> {
  const stat = await lstat(target);
  if (stat.isSymbolicLink()) return;
  const mode = stat.mode & 0o777;
  const readable = stat.isDirectory() || (mode & 0o111) !== 0 ? 0o555 : 0o444;
  await chmod(target, (mode | readable) & ~0o022);
  if (stat.isDirectory()) {
    for (const entry of await readdir(target)) await makeReadable(path.join(target, entry));
  }
}
