import { spawn, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../bin/tessera.js");
/** The link npm install makes in the repository root, which `npx tessera` runs. */
export const LINKED_BIN = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  "../../../node_modules/.bin/tessera",
);

/**
 * Node's flags that run the TypeScript sources, as `npm run dev` does, instead of the compiled dist/ a plain
 * `node bin/tessera.js` runs (package.json "imports"): the tests never depend on a build being current.
 */
export const SOURCE_FLAGS = [
  "--conditions=tessera-source",
  // By path: the commands run in temporary directories, from which the bare name would not resolve.
  `--import=${pathToFileURL(createRequire(import.meta.url).resolve("tsx")).href}`,
] as const;

export interface RunOptions {
  /** Written to the command's stdin, which is otherwise closed. */
  readonly input?: string;
  /** The file run with node; default the package's bin/tessera.js. */
  readonly bin?: string;
}

export interface Run {
  readonly child: ChildProcess;
  stderr: string;
  stdout: string;
  readonly exited: Promise<number | null>;
}

export const running = new Set<ChildProcess>();

/** Runs the real `tessera` binary as a user would; every process started here is killed by pid afterwards. */
export function tessera(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  { input, bin = BIN }: RunOptions = {},
): Run {
  const child = spawn(process.execPath, [...SOURCE_FLAGS, bin, ...args], {
    cwd,
    env: { PATH: process.env.PATH ?? "", TESSERA_LOG_LEVEL: "warn", ...env },
    stdio: [input === undefined ? "ignore" : "pipe", "pipe", "pipe"],
  });
  running.add(child);
  child.stdin?.end(input);
  const run: Run = {
    child,
    stderr: "",
    stdout: "",
    exited: new Promise((resolve) => child.once("exit", (code) => resolve(code))),
  };
  // Decoded by the stream, so a character split across two chunks ("…" in a table) arrives whole.
  child.stderr?.setEncoding("utf8").on("data", (chunk: string) => (run.stderr += chunk));
  child.stdout?.setEncoding("utf8").on("data", (chunk: string) => (run.stdout += chunk));
  void run.exited.then(() => running.delete(child));
  return run;
}

export interface Finished {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `tessera` to its end. */
export async function run(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  options: RunOptions = {},
): Promise<Finished> {
  const started = tessera(args, env, cwd, options);
  // "close", not "exit": it comes once the output streams have ended too, so nothing written is missed.
  const code = await new Promise<number | null>((resolve) => started.child.once("close", resolve));
  return { code, stdout: started.stdout, stderr: started.stderr };
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
