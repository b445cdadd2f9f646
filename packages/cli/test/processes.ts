import { readFileSync, readdirSync } from "node:fs";
import type { Run } from "./run-cli.js";

/** State and parent of a process from /proc/<pid>/stat, or undefined once it is gone. */
function stat(pid: number): { state: string; ppid: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) is in parentheses and may itself hold spaces or parentheses.
    const [state, ppid] = text.slice(text.lastIndexOf(")") + 2).split(" ");
    return { state: state!, ppid: Number(ppid) };
  } catch {
    return undefined;
  }
}

/** Whether `pid` still runs; a zombie (dead, not yet reaped) does not. */
export function isAlive(pid: number): boolean {
  const found = stat(pid);
  return found !== undefined && found.state !== "Z";
}

/** Every live process below `pid` (Linux: read from /proc), children first. */
export function descendants(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const found = stat(Number(entry));
    if (found === undefined || found.state === "Z") continue;
    children.set(found.ppid, [...(children.get(found.ppid) ?? []), Number(entry)]);
  }
  const below: number[] = [];
  const queue = [pid];
  while (queue.length > 0) {
    for (const child of children.get(queue.shift()!) ?? []) {
      below.push(child);
      queue.push(child);
    }
  }
  return below;
}

/** Polls `check` until it holds; throws with `what` and the last state after `timeoutMs`. */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: () => string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** SIGTERM, as an operator stops a server; SIGKILL if it has not exited after `graceMs`. Answers the exit code. */
export async function stopServer(server: Run, graceMs = 20_000): Promise<number | null> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return server.child.exitCode;
  server.child.kill("SIGTERM");
  const timer = setTimeout(() => server.child.kill("SIGKILL"), graceMs);
  try {
    return await server.exited;
  } finally {
    clearTimeout(timer);
  }
}

/** pino's numeric levels: 50 is error, 60 fatal. */
export function errorLines(stderr: string): string[] {
  return stderr.split("\n").filter((line) => /"level":(5|6)\d/.test(line));
}
