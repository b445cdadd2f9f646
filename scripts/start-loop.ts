// `npm run start-loop`: runs the Quick start's `npm start` again and again, each time on a fresh data directory
// (first start: migrations, a development master key, the bootstrap tenant), and checks that every start answers
// GET /readyz with 200 and stops cleanly: SIGTERM to the server, as a process supervisor sends it, and the server
// exits 0 (so does `npm start`, which reports its exit status), leaves no process behind and prints no native
// assertion. Not part of `npm test`: it takes a minute. Issue 16: on Node.js 24 with better-sqlite3 12, 3 starts
// in 5 aborted with `Assertion failed: (env) != nullptr` while the process exited.
import { execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, readlink, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { freePort, httpRequest } from "../bench/server.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 30_000;
/** Printed by a native addon that fails a CHECK or an assert, and by Node.js itself on a fatal error. */
const NATIVE_FAILURE = /Assertion failed|FATAL ERROR|Segmentation fault|double free|core dumped/i;

const USAGE = `Usage: npm run start-loop -- [--runs <n>]

  --runs <n>   starts (default 20)
  -h, --help   show this help`;

const { values } = parseArgs({
  options: { runs: { type: "string", default: "20" }, help: { type: "boolean", short: "h", default: false } },
});
if (values.help) {
  process.stdout.write(`${USAGE}\n`);
  process.exit(0);
}
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) {
  process.stderr.write(`--runs must be a positive integer\n${USAGE}\n`);
  process.exit(2);
}

interface Outcome {
  readonly ok: boolean;
  readonly line: string;
  /** The Node.js binary the server ran on. */
  readonly node?: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(50);
  }
  return false;
}

/** Every live process of the group `npm start` was started in (it leads its own group), zombies aside. */
function groupMembers(groupId: number): { pid: number; argv: string[] }[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, "latin1");
        // After the name in parentheses: state, ppid, pgrp (proc(5)).
        const [state, , group] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (state === "Z" || Number(group) !== groupId) return [];
        const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").filter(Boolean);
        return [{ pid: Number(name), argv }];
      } catch {
        return [];
      }
    });
}

/** The server: the Node.js process running bin/tessera.js (npm runs it through `sh -c`). */
function serverOf(groupId: number): number | undefined {
  return groupMembers(groupId).find(
    ({ argv }) => argv[0] !== "sh" && argv.some((arg) => arg.endsWith("packages/cli/bin/tessera.js")),
  )?.pid;
}

async function startOnce(run: number): Promise<Outcome> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "tessera-start-loop-"));
  const port = await freePort();
  // The Quick start's environment: nothing but where to keep the data and where to listen.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => name !== "NODE_ENV" && !name.startsWith("TESSERA_")),
  );
  const started = performance.now();
  const npm = spawn("npm", ["start"], {
    cwd: ROOT,
    env: { ...env, TESSERA_DATA_DIR: dataDir, TESSERA_PORT: String(port), TESSERA_HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"],
    // Its own process group, so that whatever is left of it can be found, and killed, by its id.
    detached: true,
  });
  let output = "";
  npm.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  npm.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  let ended = false;
  const exited = new Promise<number | string>((resolve) =>
    npm.once("exit", (code, signal) => {
      ended = true;
      resolve(code ?? signal ?? "unknown");
    }),
  );
  const fail = (why: string): Outcome => ({
    ok: false,
    line: `start ${run}/${runs}: ${why}\n${output.trim()}`,
  });
  try {
    const ready = await until(
      () =>
        ended ||
        httpRequest(`http://127.0.0.1:${port}/readyz`, { timeoutMs: 1000 }).then(
          (answer) => answer.status === 200,
          () => false,
        ),
      READY_TIMEOUT_MS,
    );
    const readyMs = performance.now() - started;
    if (ended) return fail(`npm start ended with ${await exited} before /readyz answered`);
    if (!ready) return fail(`no 200 from /readyz within ${READY_TIMEOUT_MS} ms`);
    const server = serverOf(npm.pid!);
    if (server === undefined) return fail("the server process was not found under npm");
    const binary = await readlink(`/proc/${server}/exe`);
    const node = `${execFileSync(binary, ["--version"], { encoding: "utf8" }).trim()} (${binary})`;

    const stopping = performance.now();
    process.kill(server, "SIGTERM");
    const status = await Promise.race([exited, sleep(STOP_TIMEOUT_MS).then(() => "timeout" as const)]);
    const stopMs = performance.now() - stopping;
    if (status !== 0) return fail(`npm start ended with ${status} after SIGTERM to the server`);
    if (!(await until(() => groupMembers(npm.pid!).length === 0, 5000))) {
      const left = groupMembers(npm.pid!).map(({ pid, argv }) => `${pid} ${argv.join(" ")}`);
      return fail(`processes left behind: ${left.join("; ")}`);
    }
    if (NATIVE_FAILURE.test(output)) return fail("a native failure was printed");
    return {
      ok: true,
      node,
      line: `start ${run}/${runs}: ready in ${readyMs.toFixed(0)} ms, stopped cleanly in ${stopMs.toFixed(0)} ms`,
    };
  } finally {
    // Only this start's own group, by its id, and only if something of it is still there.
    if (groupMembers(npm.pid!).length > 0) process.kill(-npm.pid!, "SIGKILL");
    await rm(dataDir, { recursive: true, force: true });
  }
}

let passed = 0;
let node: string | undefined;
for (let run = 1; run <= runs; run += 1) {
  const outcome = await startOnce(run);
  node ??= outcome.node;
  if (outcome.ok) passed += 1;
  process.stdout.write(`${outcome.line}\n`);
}
process.stdout.write(`Node.js: ${node ?? "unknown"}; load average ${os.loadavg()[0]?.toFixed(2)}\n`);
process.stdout.write(`${passed} passed, ${runs - passed} failed\n`);
process.exit(passed === runs ? 0 : 1);
