import { execFileSync, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

export interface Cluster {
  readonly url: string;
  stop(): void;
}

/** The directory holding initdb and pg_ctl, or undefined when PostgreSQL is not installed. */
export function findPostgresBin(): string | undefined {
  const onPath = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" }).stdout.trim();
  if (onPath) return path.dirname(onPath);
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  for (const version of versions) {
    const bin = path.join(root, version, "bin");
    if (existsSync(path.join(bin, "initdb"))) return bin;
  }
  return undefined;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/**
 * A throwaway cluster in a temp dir on a free port. PostgreSQL refuses to run as root, so under root (CI
 * containers) it runs as the `postgres` user that the Debian package creates. Durability settings are off:
 * the cluster dies with the test run.
 */
export async function startCluster(bin: string): Promise<Cluster> {
  const dir = mkdtempSync(path.join(tmpdir(), "tessera-pg-"));
  const data = path.join(dir, "data");
  const port = await freePort();
  const asRoot = process.getuid?.() === 0;
  const pgUser = asRoot ? lookupUid("postgres") : undefined;
  if (asRoot && pgUser === undefined)
    throw new Error("running as root needs a 'postgres' user to run PostgreSQL");
  if (pgUser !== undefined) chownSync(dir, pgUser.uid, pgUser.gid);

  const run = (tool: string, args: string[]) => {
    const command = path.join(bin, tool);
    const [file, argv] =
      pgUser === undefined
        ? [command, args]
        : ["setpriv", [`--reuid=${pgUser.uid}`, `--regid=${pgUser.gid}`, "--clear-groups", command, ...args]];
    execFileSync(file, argv, { stdio: ["ignore", "pipe", "pipe"], cwd: dir });
  };

  let started = false;
  const stop = () => {
    if (started) {
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } catch {
        killPostmaster(data);
      }
      started = false;
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    run("initdb", [
      "-D",
      data,
      "-U",
      "tessera",
      "--auth=trust",
      "-E",
      "UTF8",
      "--no-sync",
      "--no-instructions",
    ]);
    const options = [
      `-p ${port}`,
      `-k ${dir}`,
      "-c listen_addresses=127.0.0.1",
      "-c fsync=off",
      "-c synchronous_commit=off",
      "-c full_page_writes=off",
      "-c max_connections=200",
    ].join(" ");
    run("pg_ctl", ["-D", data, "-l", path.join(dir, "server.log"), "-o", options, "-w", "-t", "60", "start"]);
    started = true;
  } catch (error) {
    stop();
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? "";
    throw new Error(`could not start PostgreSQL: ${(error as Error).message}\n${stderr}`);
  }
  return { url: `postgres://tessera@127.0.0.1:${port}/postgres`, stop };
}

function killPostmaster(data: string): void {
  try {
    const pid = Number(readFileSync(path.join(data, "postmaster.pid"), "utf8").split("\n", 1)[0]);
    if (pid > 0) process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}

function lookupUid(user: string): { uid: number; gid: number } | undefined {
  const line = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith(`${user}:`));
  const fields = line?.split(":");
  if (fields === undefined || fields.length < 4) return undefined;
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}
