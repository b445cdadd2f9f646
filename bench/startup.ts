// `npm run bench:startup`: how long `tessera serve` takes from the spawn of its process to the first 200 of
// GET /healthz (listening) and of GET /readyz (store open and migrated), on the embedded store. Each start is a
// first start (an empty data directory: migrations, a development master key, the bootstrap tenant) followed by a
// restart on the same directory, the common case. The server runs on the Node.js that runs this script: the
// compiled files (dist/) as `npm start` runs them, or with --source the TypeScript sources through tsx, as
// `npm run dev` does and as every start did before issue 16.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { formatTable } from "./format.js";
import { median } from "./load.js";
import { freePort, httpRequest, isRunning, spawnServer, stopServer, type ServerProcess } from "./server.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
/** Tight enough to resolve a few milliseconds, loose enough not to slow the start it measures. */
const POLL_MS = 5;
const START_TIMEOUT_MS = 60_000;
const SOURCE_FLAGS = ["--conditions=tessera-source", "--import", "tsx"];

const USAGE = `Usage: npm run bench:startup -- [options]

  --runs <n>   starts per kind (default 10)
  --source     run the TypeScript sources through tsx instead of the compiled dist/
  --json       print every start's figures as JSON instead of the table (for runs interleaved with
               another checkout or Node.js, docs/performance.md#startup)
  -h, --help   show this help`;

interface StartFigures {
  readonly healthzMs: number;
  readonly readyzMs: number;
}

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "10" },
    source: { type: "boolean", default: false },
    json: { type: "boolean", default: false },
    help: { type: "boolean", short: "h", default: false },
  },
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

async function firstOk(server: ServerProcess, route: string, started: number): Promise<number> {
  const deadline = started + START_TIMEOUT_MS;
  while (performance.now() < deadline) {
    if (!isRunning(server))
      throw new Error(`the server exited before ${route} answered:\n${server.output()}`);
    const status = await httpRequest(server.baseUrl + route, { timeoutMs: 1000 }).then(
      (answer) => answer.status,
      () => 0,
    );
    if (status === 200) return performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  throw new Error(`${route} did not answer 200 within ${START_TIMEOUT_MS} ms:\n${server.output()}`);
}

/** One start on `dataDir`, stopped by SIGTERM once ready; the stop must be a clean exit. */
async function timeStart(dataDir: string, managementKey: string): Promise<StartFigures> {
  const port = await freePort();
  // Inherited TESSERA_* settings or NODE_ENV=production would change what a start does.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => name !== "NODE_ENV" && !name.startsWith("TESSERA_")),
  );
  const started = performance.now();
  const server = spawnServer({
    name: "tessera serve",
    args: [...(values.source ? SOURCE_FLAGS : []), "packages/cli/bin/tessera.js", "serve"],
    cwd: REPO_ROOT,
    env: {
      ...inherited,
      TESSERA_DATA_DIR: dataDir,
      TESSERA_PORT: String(port),
      TESSERA_HOST: "127.0.0.1",
      TESSERA_BOOTSTRAP_KEY: managementKey,
      TESSERA_LOG_LEVEL: "warn",
    },
    port,
  });
  let figures: StartFigures;
  try {
    const healthzMs = await firstOk(server, "/healthz", started);
    figures = { healthzMs, readyzMs: await firstOk(server, "/readyz", started) };
  } finally {
    await stopServer(server);
  }
  // A start that does not stop cleanly voids the run.
  if (server.child.exitCode !== 0) {
    throw new Error(
      `the server did not stop cleanly (exit ${server.child.exitCode}, ${server.child.signalCode}):\n` +
        server.output(),
    );
  }
  return figures;
}

const first: StartFigures[] = [];
const restart: StartFigures[] = [];
const loadBefore = os.loadavg();
for (let run = 1; run <= runs; run += 1) {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), "tessera-startup-"));
  try {
    const managementKey = randomBytes(32).toString("hex");
    first.push(await timeStart(dataDir, managementKey));
    restart.push(await timeStart(dataDir, managementKey));
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
  process.stderr.write(`start ${run}/${runs} done\n`);
}
const loadAfter = os.loadavg();

if (values.json) {
  process.stdout.write(`${JSON.stringify({ node: process.version, first, restart })}\n`);
  process.exit(0);
}
const ms = (value: number) => value.toFixed(0);
const row = (kind: string, figures: readonly StartFigures[], pick: (f: StartFigures) => number) => {
  const all = figures.map(pick);
  return [kind, ms(median(all)), ms(Math.min(...all)), ms(Math.max(...all))];
};
process.stdout.write(
  `Node.js ${process.version}, ${values.source ? "sources through tsx" : "compiled dist/"}, ${runs} starts ` +
    `per kind, load average ${loadBefore[0]?.toFixed(2)} before, ` +
    `${loadAfter[0]?.toFixed(2)} after (${os.cpus().length} cores)\n\n`,
);
process.stdout.write(
  formatTable(
    ["start (ms from spawn)", "median", "min", "max"],
    [
      row("first start, /healthz", first, (f) => f.healthzMs),
      row("first start, /readyz", first, (f) => f.readyzMs),
      row("restart, /healthz", restart, (f) => f.healthzMs),
      row("restart, /readyz", restart, (f) => f.readyzMs),
    ],
  ) + "\n",
);
