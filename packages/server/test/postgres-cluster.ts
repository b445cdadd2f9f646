import { execFileSync, spawnSync } from "node:child_process";
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

export interface Cluster {
  readonly url: string;
  /**
   * Stops the server as an operator would (`pg_ctl stop -m fast`: connections are ended, what was committed is
   * kept), to test what happens while it is down. Not `immediate`: with this cluster's durability settings off,
   * a crash would lose recent commits, which is not what such a test is about.
   */
  halt(): void;
  /** Starts a halted server again on the same port and data. */
  resume(): void;
  /** Stops the server for good and removes its files. */
  stop(): void;
}

export interface ClusterOptions {
  /** Makes the user `tessera` log in with this password (scram-sha-256) instead of being trusted. */
  readonly password?: string;
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
export async function startCluster(bin: string, { password }: ClusterOptions = {}): Promise<Cluster> {
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
  const shutDown = (mode: "fast" | "immediate") => {
    if (!started) return;
    try {
      run("pg_ctl", ["-D", data, "-m", mode, "-w", "stop"]);
    } catch {
      killPostmaster(data);
    }
    started = false;
  };
  const halt = () => shutDown("fast");
  const options = [
    `-p ${port}`,
    `-k ${dir}`,
    "-c listen_addresses=127.0.0.1",
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    "-c max_connections=200",
  ].join(" ");
  const resume = () => {
    if (started) return;
    run("pg_ctl", ["-D", data, "-l", path.join(dir, "server.log"), "-o", options, "-w", "-t", "60", "start"]);
    started = true;
  };
  const stop = () => {
    shutDown("immediate");
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    const auth =
      password === undefined
        ? ["--auth=trust"]
        : ["--auth=scram-sha-256", `--pwfile=${writePasswordFile(dir, password, pgUser)}`];
    run("initdb", ["-D", data, "-U", "tessera", ...auth, "-E", "UTF8", "--no-sync", "--no-instructions"]);
    resume();
  } catch (error) {
    stop();
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? "";
    throw new Error(`could not start PostgreSQL: ${(error as Error).message}\n${stderr}`);
  }
  const user = password === undefined ? "tessera" : `tessera:${encodeURIComponent(password)}`;
  return { url: `postgres://${user}@127.0.0.1:${port}/postgres`, halt, resume, stop };
}

/** initdb reads the first password from a file, as the user it runs as. */
function writePasswordFile(
  dir: string,
  password: string,
  owner: { uid: number; gid: number } | undefined,
): string {
  const file = path.join(dir, "password");
  writeFileSync(file, `${password}\n`, { mode: 0o600 });
  if (owner !== undefined) chownSync(file, owner.uid, owner.gid);
  return file;
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
