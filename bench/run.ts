// `npm run bench`: Tessera's throughput per scenario, as a fraction of a ceiling measured on the same machine in
// the same run: what a bare Fastify server answering a body of the same size manages, or, for token creation,
// what a plain SQLite loop committing one token per transaction manages. The ratio, not the raw req/s, is the
// pass mark, so the verdict holds on a laptop, a CI runner or a shared box alike.
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  medians,
  roundProblems,
  runLoad,
  type MedianFigures,
  type RoundFigures,
  type Measured,
} from "./load.js";
import { scenarios, type CeilingKind, type LoadRequest, type Scenario } from "./scenarios.js";
import {
  freePort,
  httpRequest,
  isRunning,
  spawnProcess,
  spawnServer,
  stopServer,
  waitUntilReady,
  type BenchProcess,
  type ServerProcess,
} from "./server.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_FILE = fileURLToPath(new URL("results.json", import.meta.url));
/** One request in flight per connection, as a client that waits for each answer would have. */
const PIPELINING = 1;

const USAGE = `Usage: npm run bench -- [options]

  --duration <s>      measured seconds per round (default 10)
  --warmup <s>        discarded warm-up seconds per server, before the first round (default 3)
  --rounds <n>        measured rounds per server, alternating ceiling and Tessera (default 2)
  --connections <n>   concurrent connections (default 10)
  --only <text>       run only the scenarios whose name contains <text>
  --profile <dir>     write a V8 CPU profile of the Tessera server to <dir> (node --cpu-prof)
  -h, --help          show this help
`;

interface Settings {
  readonly durationS: number;
  readonly warmupS: number;
  readonly rounds: number;
  readonly connections: number;
  readonly only?: string;
  readonly profileDir?: string;
}

/** The settings, or undefined if only the usage was asked for. */
function parseSettings(argv: string[]): Settings | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: "string", default: "10" },
      warmup: { type: "string", default: "3" },
      rounds: { type: "string", default: "2" },
      connections: { type: "string", default: "10" },
      only: { type: "string" },
      profile: { type: "string" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help === true) return undefined;
  return {
    durationS: integerOption("--duration", values.duration, 1),
    warmupS: integerOption("--warmup", values.warmup, 0),
    rounds: integerOption("--rounds", values.rounds, 1),
    connections: integerOption("--connections", values.connections, 1),
    ...(values.only !== undefined && { only: values.only }),
    ...(values.profile !== undefined && { profileDir: path.resolve(values.profile) }),
  };
}

function integerOption(name: string, raw: string, min: number): number {
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`${name} must be an integer ≥ ${min}`);
  return value;
}

// Everything this run must undo. Only these processes are ever signalled, and only by their pid.
const children: BenchProcess[] = [];
let tempDir: string | undefined;
let cleaning: Promise<void> | undefined;

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all(children.map((child) => stopServer(child)));
    if (tempDir !== undefined) await rm(tempDir, { recursive: true, force: true });
  })();
  return cleaning;
}

async function retire(child: BenchProcess): Promise<void> {
  await stopServer(child);
  const index = children.indexOf(child);
  if (index >= 0) children.splice(index, 1);
}

async function startTessera(
  dataDir: string,
  managementKey: string,
  profileDir: string | undefined,
): Promise<ServerProcess> {
  const port = await freePort();
  // Inherited TESSERA_* settings (a master key file, a PostgreSQL URL…) would make the figures depend on the shell
  // the benchmark was started from, and NODE_ENV=production would demand a master key.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => name !== "NODE_ENV" && !name.startsWith("TESSERA_")),
  );
  const server = spawnServer({
    name: "Tessera",
    // The profile is written when the server exits, which the cleanup's SIGTERM makes a graceful exit.
    args: [
      ...(profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]),
      "packages/cli/bin/tessera.js",
      "serve",
    ],
    cwd: REPO_ROOT,
    env: {
      ...inherited,
      TESSERA_DATA_DIR: dataDir,
      TESSERA_DATABASE_URL: `sqlite:${path.join(dataDir, "tessera.db")}`,
      TESSERA_PORT: String(port),
      TESSERA_HOST: "127.0.0.1",
      TESSERA_BOOTSTRAP_KEY: managementKey,
      // Per-request info logs would measure pino's output rather than the vault.
      TESSERA_LOG_LEVEL: "warn",
    },
    port,
  });
  children.push(server);
  await waitUntilReady(server, "/readyz");
  return server;
}

async function startCeiling(bodyBytes: number): Promise<ServerProcess> {
  const port = await freePort();
  const server = spawnServer({
    name: "ceiling",
    args: ["--import", "tsx", "bench/ceiling.ts", String(port), String(bodyBytes)],
    cwd: REPO_ROOT,
    env: process.env,
    port,
  });
  children.push(server);
  await waitUntilReady(server, "/");
  const probe = await httpRequest(`${server.baseUrl}/`);
  if (probe.body.length !== bodyBytes) {
    throw new Error(`the ceiling answered ${probe.body.length} bytes instead of ${bodyBytes}`);
  }
  return server;
}

let storageRuns = 0;

/**
 * One run of storage-ceiling.ts for `durationS` seconds, on a fresh database file next to Tessera's (same file
 * system, so the same fsync cost), deleted afterwards.
 */
async function runStorageCeiling(durationS: number): Promise<RoundFigures> {
  if (tempDir === undefined) throw new Error("the storage ceiling runs inside the benchmark's directory");
  const run = ++storageRuns;
  const dbFile = path.join(tempDir, `storage-ceiling-${run}.db`);
  const resultFile = path.join(tempDir, `storage-ceiling-${run}.json`);
  const child = spawnProcess({
    name: "storage ceiling",
    args: ["--import", "tsx", "bench/storage-ceiling.ts", dbFile, String(durationS), resultFile],
    cwd: REPO_ROOT,
    env: process.env,
  });
  children.push(child);
  try {
    await child.exited;
  } finally {
    await retire(child);
  }
  if (child.child.exitCode !== 0) {
    throw new Error(
      `the storage ceiling failed (exit ${child.child.exitCode ?? child.child.signalCode}):\n${child.output()}`,
    );
  }
  const figures = JSON.parse(await readFile(resultFile, "utf8")) as RoundFigures;
  await Promise.all(
    [dbFile, `${dbFile}-wal`, `${dbFile}-shm`, resultFile].map((file) => rm(file, { force: true })),
  );
  return figures;
}

/** What one load run against a target gives, and why its figures might not be trusted. */
interface Target {
  readonly label: string;
  measure(durationS: number): Promise<RoundFigures>;
  problems(figures: RoundFigures): string[];
  readonly rounds: RoundFigures[];
}

interface Ceiling {
  /** How the table names the ceiling row. */
  readonly label: string;
  readonly target: Target;
  /** Processes that must stay up while the rounds run. */
  readonly servers: readonly ServerProcess[];
  stop(): Promise<void>;
}

function httpTarget(label: string, url: string, request: LoadRequest, settings: Settings): Target {
  return {
    label,
    measure: (durationS) =>
      runLoad(url, request, { connections: settings.connections, pipelining: PIPELINING, durationS }),
    problems: (figures) => roundProblems(figures, request.expectedStatus),
    rounds: [],
  };
}

async function startCeilingFor(
  kind: CeilingKind,
  request: LoadRequest,
  bodyBytes: number,
  settings: Settings,
): Promise<Ceiling> {
  switch (kind) {
    case "http": {
      const server = await startCeiling(bodyBytes);
      // The same request headers go to both servers, so only the work behind the route differs.
      const ceilingRequest: LoadRequest = {
        method: "GET",
        path: "/",
        headers: request.headers,
        expectedStatus: 200,
      };
      return {
        label: `ceiling: bare Fastify, ${bodyBytes} B JSON`,
        target: httpTarget("ceiling", `${server.baseUrl}/`, ceilingRequest, settings),
        servers: [server],
        stop: () => retire(server),
      };
    }
    case "storage":
      return {
        label: "ceiling: storage: plain better-sqlite3 loop, 1 txn/token",
        target: {
          label: "storage ceiling",
          measure: runStorageCeiling,
          // No HTTP, so no statuses: a run that committed nothing is the only failure it can show.
          problems: (figures) => (figures.responses > 0 ? [] : ["no transactions committed"]),
          rounds: [],
        },
        servers: [],
        stop: () => Promise.resolve(),
      };
  }
}

interface ScenarioReport {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly bodyBytes: number;
  readonly ceilingKind: CeilingKind;
  readonly ceilingLabel: string;
  readonly minRatio: number;
  /** null when the scenario sets no latency target. */
  readonly maxP99Ms: number | null;
  readonly ceiling: Measured;
  readonly tessera: Measured;
  readonly ratio: number;
  /** Why the scenario failed ("errors", "ratio", "p99"); empty when it passed. */
  readonly failures: string[];
  readonly pass: boolean;
}

async function runScenario(
  scenario: Scenario,
  tessera: ServerProcess,
  managementKey: string,
  settings: Settings,
): Promise<ScenarioReport> {
  const request = await scenario.prepare({ baseUrl: tessera.baseUrl, managementKey });
  const url = tessera.baseUrl + request.path;
  const probe = await httpRequest(url, request);
  if (probe.status !== request.expectedStatus) {
    throw new Error(
      `${scenario.name} answered HTTP ${probe.status}, expected ${request.expectedStatus}: ${probe.body.toString("utf8")}`,
    );
  }
  const bodyBytes = probe.body.length;

  const ceiling = await startCeilingFor(scenario.ceiling, request, bodyBytes, settings);
  try {
    const targets = [ceiling.target, httpTarget("Tessera", url, request, settings)] as const;
    if (settings.warmupS > 0) {
      for (const target of targets) {
        progress(`${scenario.name}: warming up ${target.label} for ${settings.warmupS} s`);
        await target.measure(settings.warmupS);
      }
    }
    // Alternating spreads the machine's background noise over both targets instead of penalising whichever ran
    // while a neighbour was busy.
    for (let round = 1; round <= settings.rounds; round++) {
      for (const target of targets) {
        assertAlive(tessera, ...ceiling.servers);
        const figures = await target.measure(settings.durationS);
        target.rounds.push(figures);
        progress(
          `${scenario.name}: round ${round}/${settings.rounds} ${target.label}: ${figures.reqPerSec.toFixed(0)} req/s, ` +
            `p50 ${figures.p50Ms.toFixed(2)} ms, p99 ${figures.p99Ms.toFixed(2)} ms`,
        );
      }
    }
    const [ceilingFigures, tesseraFigures] = targets.map(summarize) as [Measured, Measured];
    const ratio = tesseraFigures.median.reqPerSec / ceilingFigures.median.reqPerSec;
    const failures: string[] = [];
    if (ceilingFigures.problems.length + tesseraFigures.problems.length > 0) failures.push("errors");
    if (!(ratio >= scenario.minRatio)) failures.push("ratio");
    if (scenario.maxP99Ms !== undefined && !(tesseraFigures.median.p99Ms < scenario.maxP99Ms)) {
      failures.push("p99");
    }
    return {
      name: scenario.name,
      method: request.method,
      path: request.path,
      bodyBytes,
      ceilingKind: scenario.ceiling,
      ceilingLabel: ceiling.label,
      minRatio: scenario.minRatio,
      maxP99Ms: scenario.maxP99Ms ?? null,
      ceiling: ceilingFigures,
      tessera: tesseraFigures,
      ratio,
      failures,
      pass: failures.length === 0,
    };
  } finally {
    await ceiling.stop();
  }
}

function summarize(target: Target): Measured {
  const problems = target.rounds.flatMap((figures, index) =>
    target.problems(figures).map((problem) => `round ${index + 1}: ${problem}`),
  );
  return { rounds: target.rounds, median: medians(target.rounds), problems };
}

/** A server that died mid-run would otherwise show up only as a wall of connection errors. */
function assertAlive(...running: BenchProcess[]): void {
  for (const server of running) {
    if (!isRunning(server)) {
      throw new Error(`${server.name} exited during the benchmark:\n${server.output()}`);
    }
  }
}

function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}

function header(settings: Settings): string {
  const cpus = os.cpus();
  return (
    `Tessera benchmark: node ${process.version}, ${cpus.length} CPUs (${cpus[0]?.model.trim() ?? "unknown"}), ` +
    `${settings.connections} connections, pipelining ${PIPELINING}, ${settings.durationS} s per round ` +
    `after ${settings.warmupS} s warm-up, median of ${settings.rounds} alternating rounds`
  );
}

function table(reports: readonly ScenarioReport[]): string {
  const head = ["scenario", "req/s (median)", "p50 ms", "p99 ms", "ratio to ceiling", "target", "result"];
  const body: string[][] = reports.flatMap((report) => {
    const { ceiling, tessera } = report;
    const target = [
      `≥ ${report.minRatio.toFixed(2)}`,
      ...(report.maxP99Ms === null ? [] : [`p99 < ${report.maxP99Ms} ms`]),
    ].join(", ");
    return [
      [
        report.ceilingLabel,
        ...figureCells(ceiling.median),
        "1.00",
        "",
        ceiling.problems.length > 0 ? "errors" : "",
      ],
      [
        report.name,
        ...figureCells(tessera.median),
        report.ratio.toFixed(2),
        target,
        report.pass ? "pass" : `FAIL (${report.failures.join(", ")})`,
      ],
    ];
  });
  const widths = head.map((title, column) =>
    Math.max(title.length, ...body.map((row) => row[column]?.length ?? 0)),
  );
  const line = (row: string[]) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(" | ");
  return [line(head), widths.map((width) => "-".repeat(width)).join("-|-"), ...body.map(line)].join("\n");
}

function figureCells(figures: MedianFigures): string[] {
  return [figures.reqPerSec.toFixed(0), figures.p50Ms.toFixed(2), figures.p99Ms.toFixed(2)];
}

async function main(settings: Settings): Promise<boolean> {
  tempDir = await mkdtemp(path.join(os.tmpdir(), "tessera-bench-"));
  // 36 random bytes are 48 base64url characters: above Tessera's minimum key length, and known to this run only.
  const managementKey = randomBytes(36).toString("base64url");
  const tessera = await startTessera(tempDir, managementKey, settings.profileDir);
  const selected = scenarios.filter((s) => settings.only === undefined || s.name.includes(settings.only));
  if (selected.length === 0) throw new Error(`no scenario name contains ${JSON.stringify(settings.only)}`);

  const reports: ScenarioReport[] = [];
  for (const scenario of selected) {
    reports.push(await runScenario(scenario, tessera, managementKey, settings));
  }

  process.stdout.write(`\n${header(settings)}\n\n${table(reports)}\n`);
  for (const report of reports) {
    for (const [label, measured] of [
      ["ceiling", report.ceiling],
      ["Tessera", report.tessera],
    ] as const) {
      for (const problem of measured.problems) process.stderr.write(`${report.name}, ${label}: ${problem}\n`);
    }
  }

  const pass = reports.every((report) => report.pass);
  const cpus = os.cpus();
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform} ${os.release()} ${process.arch}`,
    cpus: { count: cpus.length, model: cpus[0]?.model.trim() },
    settings: { ...settings, pipelining: PIPELINING },
    scenarios: reports,
    pass,
  };
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`\nFigures per round: ${path.relative(process.cwd(), RESULTS_FILE)}\n`);
  return pass;
}

for (const [signal, code] of [
  ["SIGINT", 130],
  ["SIGTERM", 143],
] as const) {
  // Repeated signals wait for the same cleanup, which is bounded by stopServer's SIGKILL deadline.
  process.on(signal, () => {
    progress(`\n${signal}: stopping the servers`);
    void cleanup().finally(() => process.exit(code));
  });
}
// Last resort for an exit that skipped the awaited cleanup (process.exit elsewhere, a crash): no waiting is
// possible here, so no grace period either.
process.on("exit", () => {
  for (const child of children) if (isRunning(child)) child.child.kill("SIGKILL");
  if (tempDir !== undefined) rmSync(tempDir, { recursive: true, force: true });
});

let settings: Settings | undefined;
try {
  settings = parseSettings(process.argv.slice(2));
} catch (error) {
  process.stderr.write(`bench: ${(error as Error).message}\n\n${USAGE}`);
  process.exit(2);
}
if (settings === undefined) {
  process.stdout.write(USAGE);
  process.exit(0);
}
try {
  process.exitCode = (await main(settings)) ? 0 : 1;
} catch (error) {
  // After a signal the servers are being stopped under the run's feet; the resulting errors are expected noise.
  if (cleaning === undefined) {
    process.stderr.write(
      `bench: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
  }
  process.exitCode = 1;
} finally {
  await cleanup();
}
