// A throwaway PostgreSQL cluster for the soak: initdb in a temporary directory, started with pg_ctl on a free
// loopback port, stopped and deleted by the same object. Unlike the test suite's cluster (test settings, fsync
// off), it keeps PostgreSQL's default durability, so commits wait for the disk as the embedded store's do.
import { execFileSync } from "node:child_process";
import { chownSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { findPostgresBin } from "../../packages/server/test/postgres-cluster.js";
import { freePort } from "../server.js";

export interface SoakCluster {
  readonly url: string;
  /** The postmaster: every backend and auxiliary process of the cluster is its child. */
  readonly postmasterPid: number;
  /** The database's size (pg_database_size), and the row counts of the tables that grow if asked. */
  size(withCounts: boolean): Promise<StoreSize>;
  /** Synchronous, so that it can also run from an exit handler; stops only this cluster, by its data directory. */
  readonly stop: () => void;
}

export interface StoreSize {
  readonly bytes: number;
  /** null when not counted. */
  readonly tokens: number | null;
  readonly auditEntries: number | null;
}

/** Counts are asked for at the end only: a count(*) of the audit log is itself load. */
async function postgresSize(url: string, withCounts: boolean): Promise<StoreSize> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const size = await client.query<{ bytes: string }>(
      "select pg_database_size(current_database())::text as bytes",
    );
    let tokens: number | null = null;
    let auditEntries: number | null = null;
    if (withCounts) {
      const counts = await client.query<{ tokens: string; audit: string }>(
        "select (select count(*) from tokens)::text as tokens, (select count(*) from audit_log)::text as audit",
      );
      tokens = Number(counts.rows[0]?.tokens);
      auditEntries = Number(counts.rows[0]?.audit);
    }
    return { bytes: Number(size.rows[0]?.bytes), tokens, auditEntries };
  } finally {
    await client.end();
  }
}

/**
 * `settings`: further `-c name=value` server settings (the token benchmark's sizing, docs/performance.md); the
 * durability settings stay PostgreSQL's defaults unless one of them names them.
 */
export async function startSoakCluster(settings: readonly string[] = []): Promise<SoakCluster> {
  const bin = findPostgresBin();
  if (bin === undefined)
    throw new Error("PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql)");
  // Outside the benchmark's own directory: under root the cluster runs as `postgres`, which must reach it.
  const dir = mkdtempSync(path.join(os.tmpdir(), "tessera-soak-pg-"));
  const data = path.join(dir, "data");
  const port = await freePort();
  const owner = process.getuid?.() === 0 ? passwdEntry("postgres") : undefined;
  if (process.getuid?.() === 0) {
    if (owner === undefined) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error("PostgreSQL refuses to run as root, and there is no 'postgres' user to run it as");
    }
    chownSync(dir, owner.uid, owner.gid);
  }
  const run = (tool: string, args: readonly string[]) => {
    const command = path.join(bin, tool);
    const [file, argv] =
      owner === undefined
        ? [command, args]
        : ["setpriv", [`--reuid=${owner.uid}`, `--regid=${owner.gid}`, "--clear-groups", command, ...args]];
    execFileSync(file, argv, { stdio: ["ignore", "pipe", "pipe"], cwd: dir });
  };

  let running = false;
  const stop = () => {
    if (running) {
      running = false;
      try {
        run("pg_ctl", ["-D", data, "-m", "fast", "-w", "-t", "30", "stop"]);
      } catch {
        killPostmaster(data);
      }
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    run("initdb", ["-D", data, "-U", "tessera", "--auth=trust", "-E", "UTF8", "--no-instructions"]);
    // Two servers with a pool of 10 each, and this benchmark's own size queries.
    const options = [
      `-p ${port}`,
      `-k ${dir}`,
      "-c listen_addresses=127.0.0.1",
      "-c max_connections=50",
      ...settings.map((setting) => `-c ${setting}`),
    ];
    run("pg_ctl", [
      "-D",
      data,
      "-l",
      path.join(dir, "server.log"),
      "-o",
      options.join(" "),
      "-w",
      "-t",
      "60",
      "start",
    ]);
    running = true;
  } catch (error) {
    stop();
    const stderr = (error as { stderr?: Buffer }).stderr?.toString() ?? "";
    throw new Error(`could not start PostgreSQL: ${(error as Error).message}\n${stderr}`);
  }
  const url = `postgres://tessera@127.0.0.1:${port}/postgres`;
  return {
    url,
    postmasterPid: postmasterPid(data),
    size: (withCounts) => postgresSize(url, withCounts),
    stop,
  };
}

/** The first line of postmaster.pid; PostgreSQL writes it before pg_ctl -w returns. */
function postmasterPid(data: string): number {
  const pid = Number(readFileSync(path.join(data, "postmaster.pid"), "utf8").split("\n", 1)[0]);
  if (!Number.isSafeInteger(pid) || pid <= 0) throw new Error("postmaster.pid holds no process id");
  return pid;
}

function killPostmaster(data: string): void {
  try {
    process.kill(postmasterPid(data), "SIGKILL");
  } catch {
    // Already gone, or it never wrote its pid file.
  }
}

function passwdEntry(user: string): { readonly uid: number; readonly gid: number } | undefined {
  const fields = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((line) => line.startsWith(`${user}:`))
    ?.split(":");
  if (fields === undefined || fields.length < 4) return undefined;
  return { uid: Number(fields[2]), gid: Number(fields[3]) };
}
