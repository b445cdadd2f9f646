import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../bin/tessera.js");

export interface Run {
  readonly child: ChildProcess;
  stderr: string;
  stdout: string;
  readonly exited: Promise<number | null>;
}

export const running = new Set<ChildProcess>();

/** Runs the real `tessera` binary as a user would; every process started here is killed by pid afterwards. */
export function tessera(args: string[], env: Record<string, string>, cwd: string): Run {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", TESSERA_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  running.add(child);
  const run: Run = {
    child,
    stderr: "",
    stdout: "",
    exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))),
  };
  child.stderr?.on("data", (chunk: Buffer) => (run.stderr += chunk.toString()));
  child.stdout?.on("data", (chunk: Buffer) => (run.stdout += chunk.toString()));
  void run.exited.then(() => running.delete(child));
  return run;
}

export async function waitFor(run: Run, pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = run.stderr.match(pattern);
    if (match) return match;
    if (run.child.exitCode !== null || Date.now() > deadline) {
      throw new Error(
        `never saw ${pattern}; exit ${run.child.exitCode}\nstderr:\n${run.stderr}\nstdout:\n${run.stdout}`,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Kills every process these helpers started (by pid), whatever state the test left them in. */
export function killAll(): void {
  for (const child of running) child.kill("SIGKILL");
  running.clear();
}
