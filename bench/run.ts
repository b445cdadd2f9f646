// `npm run bench`: Tessera's throughput per scenario, as a fraction of a ceiling measured on the same machine in
// the same run: what a bare Fastify server answering a body of the same size manages, or, for token creation,
// what a plain SQLite loop committing one token per transaction manages. The ratio, not the raw req/s, is the
// pass mark, so the verdict holds on a laptop, a CI runner or a shared box alike.
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { formatTable } from "./format.js";
import {
  median,
  medians,
  roundProblems,
  runLoad,
  runLoadSpread,
  type MedianFigures,
  type RoundFigures,
  type Measured,
} from "./load.js";
import { cpuSnapshot, cpuUsed, type CpuSnapshot } from "./proc.js";
import type { Probe, ProbeContext, ProbeReport } from "./probes.js";
import { WORKER_COMM, reactorProbes, workersNeeded } from "./reactor-probes.js";
import { scenarios, type CeilingKind, type LoadRequest, type Scenario } from "./scenarios.js";
import { startSoakCluster } from "./soak/postgres.js";
import { runSoak, type SoakSettings, type SoakStore } from "./soak/soak.js";
import { MIN_INTERVALS } from "./soak/verdict.js";
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
const SOAK_RESULTS_FILE = fileURLToPath(new URL("results-soak.json", import.meta.url));
/** One request in flight per connection, as a client that waits for each answer would have. */
const PIPELINING = 1;

const USAGE = `Usage: npm run bench -- [options]

  --duration <s>      measured seconds per round (default 10)
  --warmup <s>        discarded warm-up seconds per server, before the first round (default 3)
  --rounds <n>        measured rounds per server, alternating ceiling and Tessera (default 2)
  --connections <n>   concurrent connections (default 10)
  --only <text>       run only the scenarios whose name contains <text> ("react": the reactor ones)
  --cold-starts <n>   fresh reactors timed per reactor cold-start case (default 20)
  --profile <dir>     write a V8 CPU profile of the Tessera server to <dir> (node --cpu-prof)
  --store <store>     sqlite (default) or postgres: a throwaway cluster started by the benchmark, durable as in
                      production (docs/performance.md#postgresql-tokens-and-many-instances-issue-23); the
                      storage ceiling is then a plain pg loop; the reactor probes run on sqlite only
  --instances <n>     with --store postgres and n ≥ 2: also GET /tokens/{id} on one instance and on n instances
                      of one database, the load spread evenly over them, in the same alternating rounds
  -h, --help          show this help

  --soak                    instead of the scenarios: a mixed workload for a set time, per store, with the
                            memory of every process over time (docs/performance.md#soak)
  --soak-minutes <n>        minutes per store (default 3)
  --soak-store <store>      sqlite, postgres or both (default both)
  --soak-interval <s>       seconds per reported interval (default 15)
  (--connections applies to the soak too; on PostgreSQL they are split between the two servers)
`;

interface Settings {
  /** Set when --soak asks for the soak instead of the scenarios. */
  readonly soak?: SoakSettings;
  readonly durationS: number;
  readonly warmupS: number;
  readonly rounds: number;
  readonly connections: number;
  readonly coldStarts: number;
  readonly only?: string;
  readonly profileDir?: string;
  readonly store: "sqlite" | "postgres";
  readonly instances: number;
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
      "cold-starts": { type: "string", default: "20" },
      only: { type: "string" },
      profile: { type: "string" },
      store: { type: "string", default: "sqlite" },
      instances: { type: "string", default: "1" },
      soak: { type: "boolean" },
      "soak-minutes": { type: "string", default: "3" },
      "soak-store": { type: "string", default: "both" },
      "soak-interval": { type: "string", default: "15" },
      help: { type: "boolean", short: "h" },
    },
  });
  if (values.help === true) return undefined;
  const connections = integerOption("--connections", values.connections, 1);
  const store = values.store;
  if (store !== "sqlite" && store !== "postgres") throw new Error("--store must be sqlite or postgres");
  const instances = integerOption("--instances", values.instances, 1);
  if (instances > 1 && store !== "postgres") throw new Error("--instances needs --store postgres");
  if (instances > connections) throw new Error("--instances needs at least one connection per instance");
  return {
    store,
    instances,
    ...(values.soak === true && {
      soak: soakSettings(
        values["soak-minutes"],
        values["soak-store"],
        integerOption("--soak-interval", values["soak-interval"], 1),
        connections,
      ),
    }),
    durationS: integerOption("--duration", values.duration, 1),
    warmupS: integerOption("--warmup", values.warmup, 0),
    rounds: integerOption("--rounds", values.rounds, 1),
    connections,
    coldStarts: integerOption("--cold-starts", values["cold-starts"], 1),
    ...(values.only !== undefined && { only: values.only }),
    ...(values.profile !== undefined && { profileDir: path.resolve(values.profile) }),
  };
}

function soakSettings(
  minutesRaw: string,
  storeRaw: string,
  intervalS: number,
  connections: number,
): SoakSettings {
  const minutes = Number(minutesRaw);
  if (!Number.isFinite(minutes) || minutes <= 0) throw new Error("--soak-minutes must be a positive number");
  if ((minutes * 60) / intervalS < MIN_INTERVALS) {
    throw new Error(`--soak-minutes must cover at least ${MIN_INTERVALS} intervals of --soak-interval`);
  }
  const stores: Record<string, readonly SoakStore[]> = {
    sqlite: ["sqlite"],
    postgres: ["postgres"],
    both: ["sqlite", "postgres"],
  };
  const chosen = stores[storeRaw];
  if (chosen === undefined) throw new Error("--soak-store must be sqlite, postgres or both");
  if (chosen.includes("postgres") && connections < 2) {
    throw new Error("--connections must be at least 2 on PostgreSQL: one per server");
  }
  return { minutes, stores: chosen, intervalS, connections };
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
/**
 * Other undo steps (the soak's PostgreSQL cluster, stopped by its data directory), run after the processes have
 * stopped. Synchronous, so that the exit handler can run them too.
 */
const undoSteps = new Set<() => void>();

/**
 * PostgreSQL's settings for --store postgres: durable as production runs it (every commit waits for its WAL flush,
 * as every SQLite commit waits for its fsync), and a buffer cache that holds the benchmark's whole database.
 */
const POSTGRES_SETTINGS = [
  "fsync=on",
  "synchronous_commit=on",
  "full_page_writes=on",
  "shared_buffers=256MB",
];

/** The cluster of --store postgres: what the servers are started with, and whose CPU is read around each round. */
interface BenchDatabase {
  readonly url: string;
  readonly postmasterPid: number;
  readonly env: Readonly<Record<string, string>>;
}
let database: BenchDatabase | undefined;

async function startDatabase(): Promise<BenchDatabase> {
  const cluster = await startSoakCluster(POSTGRES_SETTINGS);
  undoSteps.add(cluster.stop);
  return {
    url: cluster.url,
    postmasterPid: cluster.postmasterPid,
    // Every instance holds the same master key, as instances behind a load balancer do.
    env: { TESSERA_DATABASE_URL: cluster.url, TESSERA_MASTER_KEY: randomBytes(32).toString("base64") },
  };
}

function runUndoSteps(): void {
  for (const step of undoSteps) {
    undoSteps.delete(step);
    step();
  }
}

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all(children.map((child) => stopServer(child)));
    runUndoSteps();
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
  settingsEnv: Readonly<Record<string, string>>,
  serverName = "Tessera",
  nodeFlags: readonly string[] = [],
): Promise<ServerProcess> {
  const port = await freePort();
  // Inherited TESSERA_* settings (a master key file, a PostgreSQL URL…) would make the figures depend on the shell
  // the benchmark was started from, and NODE_ENV=production would demand a master key.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => name !== "NODE_ENV" && !name.startsWith("TESSERA_")),
  );
  const server = spawnServer({
    name: serverName,
    // The profile is written when the server exits, which the cleanup's SIGTERM makes a graceful exit.
    args: [
      ...nodeFlags,
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
      // One key from one address sends thousands of requests a second: with the rate limits on, the figures would
      // be the limiter's (docs/limits.md). Bounded concurrency and load shedding keep their defaults.
      TESSERA_RATE_LIMIT_KEY_PER_SECOND: "0",
      TESSERA_RATE_LIMIT_ADDRESS_PER_SECOND: "0",
      TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE: "0",
      ...settingsEnv,
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
  const dbFile = path.join(benchDir(), `storage-ceiling-${++storageRuns}.db`);
  try {
    return await runCeilingScript("storage ceiling", "bench/storage-ceiling.ts", [dbFile, String(durationS)]);
  } finally {
    await Promise.all([dbFile, `${dbFile}-wal`, `${dbFile}-shm`].map((file) => rm(file, { force: true })));
  }
}

/** One run of storage-ceiling-postgres.ts: `clients` plain pg clients committing tokens into the bench's cluster. */
function runPostgresStorageCeiling(url: string, durationS: number, clients: number): Promise<RoundFigures> {
  return runCeilingScript("storage ceiling (PostgreSQL)", "bench/storage-ceiling-postgres.ts", [
    url,
    String(durationS),
    String(clients),
  ]);
}

function benchDir(): string {
  if (tempDir === undefined) throw new Error("the storage ceiling runs inside the benchmark's directory");
  return tempDir;
}

/** Runs a ceiling script as a child process; it writes its figures to the file named by its last argument. */
async function runCeilingScript(name: string, script: string, args: string[]): Promise<RoundFigures> {
  const resultFile = path.join(benchDir(), `storage-ceiling-${++storageRuns}.json`);
  const child = spawnProcess({
    name,
    args: ["--import", "tsx", script, ...args, resultFile],
    cwd: REPO_ROOT,
    env: process.env,
  });
  children.push(child);
  try {
    await child.exited;
  } finally {
    await retire(child);
  }
  try {
    if (child.child.exitCode !== 0) {
      throw new Error(
        `the ${name} failed (exit ${child.child.exitCode ?? child.child.signalCode}):\n${child.output()}`,
      );
    }
    return JSON.parse(await readFile(resultFile, "utf8")) as RoundFigures;
  } finally {
    await rm(resultFile, { force: true });
  }
}

/** What one load run against a target gives, and why its figures might not be trusted. */
interface Target {
  readonly label: string;
  measure(durationS: number): Promise<RoundFigures>;
  problems(figures: RoundFigures): string[];
  readonly rounds: RoundFigures[];
  /**
   * For Tessera on Linux: the server processes whose CPU, and their reactor workers', is read around each round
   * (with the database's, on PostgreSQL); their shares add up.
   */
  readonly cpu?: { readonly pids: readonly number[]; readonly rounds: RoundCpu[] };
}

/** Shares of one core used during a round, from /proc: saturation shows as 100 % for the one event loop. */
interface RoundCpu {
  readonly serverPct: number;
  /** All reactor workers together; null when the server had none. */
  readonly workersPct: number | null;
  /** Every PostgreSQL process of the cluster together (--store postgres); null on SQLite. */
  readonly databasePct: number | null;
}

interface CpuFigures {
  readonly rounds: readonly RoundCpu[];
  readonly medianServerPct: number;
  readonly medianWorkersPct: number | null;
  readonly medianDatabasePct: number | null;
}

function cpuFigures(target: Target): CpuFigures | null {
  if (target.cpu === undefined || target.cpu.rounds.length === 0) return null;
  const { rounds } = target.cpu;
  const workers = rounds.flatMap((round) => (round.workersPct === null ? [] : [round.workersPct]));
  const databases = rounds.flatMap((round) => (round.databasePct === null ? [] : [round.databasePct]));
  return {
    rounds,
    medianServerPct: median(rounds.map((round) => round.serverPct)),
    medianWorkersPct: workers.length === 0 ? null : median(workers),
    medianDatabasePct: databases.length === 0 ? null : median(databases),
  };
}

/** Runs one round of `target`, reading the server's CPU around it when the target says so. */
async function measureRound(target: Target, durationS: number): Promise<RoundFigures> {
  const watched = target.cpu;
  const snapshots = () =>
    watched === undefined
      ? undefined
      : {
          servers: watched.pids.map((pid) => cpuSnapshot(pid, WORKER_COMM)),
          database: database === undefined ? undefined : cpuSnapshot(database.postmasterPid, "postgres"),
        };
  const before = snapshots();
  const figures = await target.measure(durationS);
  const after = snapshots();
  if (watched !== undefined && before !== undefined && after !== undefined) {
    const wallMs = figures.durationS * 1000;
    const share = (ms: number) => (100 * ms) / wallMs;
    const used = before.servers.map((snapshot, index) =>
      cpuUsed(snapshot, after.servers[index] as CpuSnapshot),
    );
    const hadWorkers = [...before.servers, ...after.servers].some(
      (snapshot) => snapshot.descendants.size > 0,
    );
    const databaseUsed =
      before.database === undefined || after.database === undefined
        ? undefined
        : cpuUsed(before.database, after.database);
    watched.rounds.push({
      serverPct: share(used.reduce((total, one) => total + one.rootMs, 0)),
      workersPct: hadWorkers ? share(used.reduce((total, one) => total + one.descendantsMs, 0)) : null,
      databasePct:
        databaseUsed === undefined ? null : share(databaseUsed.rootMs + databaseUsed.descendantsMs),
    });
  }
  return figures;
}

function cpuText(cpu: RoundCpu | null | undefined): string {
  if (cpu === null || cpu === undefined) return "";
  const workers = cpu.workersPct === null ? "" : `, workers ${cpu.workersPct.toFixed(0)} %`;
  const database = cpu.databasePct === null ? "" : `, PostgreSQL ${cpu.databasePct.toFixed(0)} %`;
  return `, server CPU ${cpu.serverPct.toFixed(0)} %${workers}${database}`;
}

interface Ceiling {
  /** How the table names the ceiling row. */
  readonly label: string;
  readonly target: Target;
  /** Processes that must stay up while the rounds run. */
  readonly servers: readonly ServerProcess[];
  stop(): Promise<void>;
}

function httpTarget(
  label: string,
  url: string,
  request: LoadRequest,
  settings: Settings,
  server?: ServerProcess,
): Target {
  const pid = server?.child.pid;
  return {
    label,
    measure: (durationS) =>
      runLoad(url, request, { connections: settings.connections, pipelining: PIPELINING, durationS }),
    problems: (figures) => roundProblems(figures, request.expectedStatus),
    rounds: [],
    // /proc is Linux's; elsewhere the figures go without CPU shares.
    ...(pid !== undefined && process.platform === "linux" && { cpu: { pids: [pid], rounds: [] } }),
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
      // The same request headers (and body, which the ceiling then parses as JSON) go to both servers, so only
      // the work behind the route differs.
      const ceilingRequest: LoadRequest = {
        method: request.body === undefined ? "GET" : "POST",
        path: "/",
        headers: request.headers,
        ...(request.body !== undefined && { body: request.body }),
        expectedStatus: 200,
      };
      return {
        label: `ceiling: bare Fastify ${ceilingRequest.method}, ${bodyBytes} B JSON`,
        target: httpTarget("ceiling", `${server.baseUrl}/`, ceilingRequest, settings),
        servers: [server],
        stop: () => retire(server),
      };
    }
    case "storage":
      if (database !== undefined) {
        const { url } = database;
        return {
          label: `ceiling: storage: plain pg loop, 1 txn/token, ${settings.connections} clients`,
          target: {
            label: "storage ceiling (PostgreSQL)",
            measure: (durationS) => runPostgresStorageCeiling(url, durationS, settings.connections),
            problems: (figures) => (figures.responses > 0 ? [] : ["no transactions committed"]),
            rounds: [],
          },
          servers: [],
          stop: () => Promise.resolve(),
        };
      }
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

interface ReferenceReport {
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly measured: Measured;
  readonly cpu: CpuFigures | null;
  /** Median over the rounds of (scenario p50 − reference p50), each pair measured back to back. */
  readonly p50AboveMs: number;
  readonly maxP50AboveMs: number;
}

interface ScenarioReport {
  readonly kind: "load";
  readonly name: string;
  readonly method: string;
  readonly path: string;
  readonly bodyBytes: number;
  readonly ceilingKind: CeilingKind;
  readonly ceilingLabel: string;
  /** null when the scenario sets no ratio target (the ratio is still measured). */
  readonly minRatio: number | null;
  /** null when the scenario sets no latency target. */
  readonly maxP99Ms: number | null;
  readonly ceiling: Measured;
  readonly tessera: Measured;
  /** The server's (and its reactor workers') share of a core during Tessera's rounds; null off Linux. */
  readonly tesseraCpu: CpuFigures | null;
  readonly ratio: number;
  readonly reference: ReferenceReport | null;
  /** Why the scenario failed ("errors", "ratio", "p99", "p50 vs reference"); empty when it passed. */
  readonly failures: string[];
  readonly pass: boolean;
}

/** Sends `request` once and returns the answer's size, failing unless its status is the expected one. */
async function probeBodyBytes(name: string, url: string, request: LoadRequest): Promise<number> {
  const probe = await httpRequest(url, request);
  if (probe.status !== request.expectedStatus) {
    throw new Error(
      `${name} answered HTTP ${probe.status}, expected ${request.expectedStatus}: ${probe.body.toString("utf8")}`,
    );
  }
  return probe.body.length;
}

async function runScenario(
  scenario: Scenario,
  tessera: ServerProcess,
  managementKey: string,
  settings: Settings,
): Promise<ScenarioReport> {
  const prepared = await scenario.prepare({ baseUrl: tessera.baseUrl, managementKey });
  const { request } = prepared;
  const url = tessera.baseUrl + request.path;
  const bodyBytes = await probeBodyBytes(scenario.name, url, request);
  if ((scenario.reference === undefined) !== (prepared.reference === undefined)) {
    throw new Error(`${scenario.name}: a reference must be both named and prepared`);
  }
  const reference =
    scenario.reference === undefined || prepared.reference === undefined
      ? undefined
      : { ...scenario.reference, request: prepared.reference };
  if (reference !== undefined) {
    await probeBodyBytes(reference.name, tessera.baseUrl + reference.request.path, reference.request);
  }

  const ceiling = await startCeilingFor(scenario.ceiling, request, bodyBytes, settings);
  try {
    const tesseraTarget = httpTarget("Tessera", url, request, settings, tessera);
    const referenceTarget =
      reference === undefined
        ? undefined
        : httpTarget(
            `Tessera ${reference.name}`,
            tessera.baseUrl + reference.request.path,
            reference.request,
            settings,
            tessera,
          );
    const targets = [
      ceiling.target,
      tesseraTarget,
      ...(referenceTarget === undefined ? [] : [referenceTarget]),
    ];
    await runRounds(scenario.name, targets, settings, [tessera, ...ceiling.servers]);
    const ceilingFigures = summarize(ceiling.target);
    const tesseraFigures = summarize(tesseraTarget);
    const ratio = tesseraFigures.median.reqPerSec / ceilingFigures.median.reqPerSec;
    const minRatio =
      settings.store === "postgres" ? (scenario.minRatioOnPostgres ?? scenario.minRatio) : scenario.minRatio;
    const failures: string[] = [];
    if (ceilingFigures.problems.length + tesseraFigures.problems.length > 0) failures.push("errors");
    if (minRatio !== undefined && !(ratio >= minRatio)) failures.push("ratio");
    if (scenario.maxP99Ms !== undefined && !(tesseraFigures.median.p99Ms < scenario.maxP99Ms)) {
      failures.push("p99");
    }
    let referenceReport: ReferenceReport | null = null;
    if (reference !== undefined && referenceTarget !== undefined) {
      const measured = summarize(referenceTarget);
      // Paired by round: a react round and the token-read round right after it saw the same neighbours.
      const p50AboveMs = median(
        tesseraTarget.rounds.map(
          (figures, index) => figures.p50Ms - (referenceTarget.rounds[index]?.p50Ms ?? NaN),
        ),
      );
      if (measured.problems.length > 0) failures.push("errors");
      if (!(p50AboveMs <= reference.maxP50AboveMs)) failures.push("p50 vs reference");
      referenceReport = {
        name: reference.name,
        method: reference.request.method,
        path: reference.request.path,
        measured,
        cpu: cpuFigures(referenceTarget),
        p50AboveMs,
        maxP50AboveMs: reference.maxP50AboveMs,
      };
    }
    return {
      kind: "load",
      name: scenario.name,
      method: request.method,
      path: request.path,
      bodyBytes,
      ceilingKind: scenario.ceiling,
      ceilingLabel: ceiling.label,
      minRatio: minRatio ?? null,
      maxP99Ms: scenario.maxP99Ms ?? null,
      ceiling: ceilingFigures,
      tessera: tesseraFigures,
      tesseraCpu: cpuFigures(tesseraTarget),
      ratio,
      reference: referenceReport,
      failures: [...new Set(failures)],
      pass: failures.length === 0,
    };
  } finally {
    await ceiling.stop();
  }
}

/** Warms every target up, then measures them in alternating rounds. */
async function runRounds(
  name: string,
  targets: readonly Target[],
  settings: Settings,
  running: readonly BenchProcess[],
): Promise<void> {
  if (settings.warmupS > 0) {
    for (const target of targets) {
      progress(`${name}: warming up ${target.label} for ${settings.warmupS} s`);
      await target.measure(settings.warmupS);
    }
  }
  // Alternating spreads the machine's background noise over every target instead of penalising whichever ran
  // while a neighbour was busy.
  for (let round = 1; round <= settings.rounds; round++) {
    for (const target of targets) {
      assertAlive(...running);
      const figures = await measureRound(target, settings.durationS);
      target.rounds.push(figures);
      progress(
        `${name}: round ${round}/${settings.rounds} ${target.label}: ${figures.reqPerSec.toFixed(0)} req/s, ` +
          `p50 ${figures.p50Ms.toFixed(2)} ms, p99 ${figures.p99Ms.toFixed(2)} ms${cpuText(target.cpu?.rounds.at(-1))}`,
      );
    }
  }
}

/** --instances: the token read on n instances of one database must serve at least this many times one's. */
const MIN_SCALING = 1.5;
const SCALED_SCENARIO = "GET /tokens/{id}";

interface ScalingReport {
  readonly name: string;
  readonly instances: number;
  readonly ceilingLabel: string;
  readonly ceiling: Measured;
  readonly one: Measured;
  readonly oneCpu: CpuFigures | null;
  readonly many: Measured;
  readonly manyCpu: CpuFigures | null;
  /** The n instances' req/s divided by one's. */
  readonly scaling: number;
  readonly minScaling: number;
  readonly failures: string[];
  readonly pass: boolean;
}

/**
 * The token read on one instance, then on `settings.instances` instances of the same database with the
 * connections spread evenly over them (as a load balancer would), beside the bare Fastify GET, in alternating
 * rounds. The further instances are started here, with the first one's settings and keys.
 */
async function runScaling(
  first: ServerProcess,
  managementKey: string,
  storeEnv: Readonly<Record<string, string>>,
  settings: Settings,
): Promise<ScalingReport> {
  const scenario = scenarios.find((candidate) => candidate.name === SCALED_SCENARIO);
  if (scenario === undefined || tempDir === undefined)
    throw new Error(`no ${SCALED_SCENARIO} scenario to scale`);
  const { request } = await scenario.prepare({ baseUrl: first.baseUrl, managementKey });
  const servers = [first];
  for (let index = 2; index <= settings.instances; index++) {
    const dataDir = path.join(tempDir, `instance-${index}`);
    await mkdir(dataDir);
    servers.push(await startTessera(dataDir, managementKey, undefined, storeEnv, `Tessera ${index}`));
  }
  try {
    // Every instance must give the same answer: one database, one master key.
    const bodies = await Promise.all(
      servers.map((server) => httpRequest(server.baseUrl + request.path, request)),
    );
    const expected = bodies[0]?.body.toString("utf8");
    for (const [index, answer] of bodies.entries()) {
      if (answer.status !== request.expectedStatus || answer.body.toString("utf8") !== expected) {
        throw new Error(`instance ${index + 1} answered ${SCALED_SCENARIO} differently from the first`);
      }
    }
    const ceiling = await startCeilingFor("http", request, bodies[0]?.body.length ?? 0, settings);
    try {
      const one = httpTarget("1 instance", first.baseUrl + request.path, request, settings, first);
      const urls = servers.map((server) => server.baseUrl + request.path);
      const pids = servers.flatMap((server) => (server.child.pid === undefined ? [] : [server.child.pid]));
      const many: Target = {
        label: `${servers.length} instances`,
        measure: (durationS) =>
          runLoadSpread(urls, request, {
            connections: settings.connections,
            pipelining: PIPELINING,
            durationS,
          }),
        problems: (figures) => roundProblems(figures, request.expectedStatus),
        rounds: [],
        ...(process.platform === "linux" && { cpu: { pids, rounds: [] } }),
      };
      const name = `${SCALED_SCENARIO} on 1 and ${servers.length} instances`;
      await runRounds(name, [ceiling.target, one, many], settings, [...servers, ...ceiling.servers]);
      const measured = { ceiling: summarize(ceiling.target), one: summarize(one), many: summarize(many) };
      const scaling = measured.many.median.reqPerSec / measured.one.median.reqPerSec;
      const failures = [
        ...(Object.values(measured).some((side) => side.problems.length > 0) ? ["errors"] : []),
        ...(scaling >= MIN_SCALING ? [] : ["scaling"]),
      ];
      return {
        name,
        instances: servers.length,
        ceilingLabel: ceiling.label,
        ...measured,
        oneCpu: cpuFigures(one),
        manyCpu: cpuFigures(many),
        scaling,
        minScaling: MIN_SCALING,
        failures,
        pass: failures.length === 0,
      };
    } finally {
      await ceiling.stop();
    }
  } finally {
    await Promise.all(servers.slice(1).map((server) => retire(server)));
  }
}

function scalingTable(report: ScalingReport): string {
  const head = [
    "GET /tokens/{id}",
    "req/s (median)",
    "p50 ms",
    "p99 ms",
    "ratio to ceiling",
    "CPU: servers, —, PostgreSQL",
    "× 1 instance",
    "result",
  ];
  const ceiling = report.ceiling.median.reqPerSec;
  const verdict = report.pass ? "pass" : `FAIL (${report.failures.join(", ")})`;
  return formatTable(head, [
    [report.ceilingLabel, ...figureCells(report.ceiling.median), "1.00", "", "", ""],
    [
      "1 instance",
      ...figureCells(report.one.median),
      (report.one.median.reqPerSec / ceiling).toFixed(2),
      cpuCell(report.oneCpu),
      "1.00",
      "",
    ],
    [
      `${report.instances} instances, load spread evenly`,
      ...figureCells(report.many.median),
      (report.many.median.reqPerSec / ceiling).toFixed(2),
      cpuCell(report.manyCpu),
      `${report.scaling.toFixed(2)} (target ≥ ${report.minScaling.toFixed(2)})`,
      verdict,
    ],
  ]);
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
    `Tessera benchmark on ${settings.store === "postgres" ? `PostgreSQL (${POSTGRES_SETTINGS.join(", ")})` : "SQLite"}: ` +
    `node ${process.version}, ${cpus.length} CPUs (${cpus[0]?.model.trim() ?? "unknown"}), ` +
    `${settings.connections} connections, pipelining ${PIPELINING}, ${settings.durationS} s per round ` +
    `after ${settings.warmupS} s warm-up, median of ${settings.rounds} alternating rounds`
  );
}

/** The 1, 5 and 15 minute load averages: the machine is shared, and a figure means little without them. */
function loadAverage(): number[] {
  return os.loadavg().map((load) => Math.round(load * 100) / 100);
}

function loads(averages: readonly number[]): string {
  return averages.map((load) => load.toFixed(2)).join(", ");
}

function table(reports: readonly ScenarioReport[], settings: Settings): string {
  const head = [
    "scenario",
    "req/s (median)",
    "p50 ms",
    "p99 ms",
    "ratio to ceiling",
    settings.store === "postgres" ? "CPU: server, workers, PostgreSQL" : "CPU: server, workers",
    "target",
    "result",
  ];
  const body: string[][] = reports.flatMap((report) => {
    const { ceiling, tessera, reference } = report;
    const target = [
      ...(report.minRatio === null ? [] : [`≥ ${report.minRatio.toFixed(2)}`]),
      ...(report.maxP99Ms === null ? [] : [`p99 < ${report.maxP99Ms} ms`]),
      ...(reference === null ? [] : [`p50 ≤ ${reference.name}'s + ${reference.maxP50AboveMs} ms`]),
    ].join(", ");
    const verdict = report.pass ? "pass" : `FAIL (${report.failures.join(", ")})`;
    const rows = [
      [
        report.ceilingLabel,
        ...figureCells(ceiling.median),
        "1.00",
        "",
        "",
        ceiling.problems.length > 0 ? "errors" : "",
      ],
      [
        report.name,
        ...figureCells(tessera.median),
        report.ratio.toFixed(2),
        cpuCell(report.tesseraCpu),
        target,
        reference === null ? verdict : `${verdict}: p50 ${signedMs(reference.p50AboveMs)}`,
      ],
    ];
    if (reference !== null) {
      rows.push([
        `beside it: ${reference.name}`,
        ...figureCells(reference.measured.median),
        "",
        cpuCell(reference.cpu),
        "",
        reference.measured.problems.length > 0 ? "errors" : "",
      ]);
    }
    return rows;
  });
  return formatTable(head, body);
}

/** Median shares of a core during Tessera's rounds: the server's event loop, and all reactor workers together. */
function cpuCell(cpu: CpuFigures | null): string {
  if (cpu === null) return "";
  const workers = cpu.medianWorkersPct === null ? "—" : `${cpu.medianWorkersPct.toFixed(0)} %`;
  const database = cpu.medianDatabasePct === null ? "" : `, ${cpu.medianDatabasePct.toFixed(0)} %`;
  return `${cpu.medianServerPct.toFixed(0)} %, ${workers}${database}`;
}

function signedMs(value: number): string {
  return `${value >= 0 ? "+" : "−"}${Math.abs(value).toFixed(2)} ms`;
}

function figureCells(figures: MedianFigures): string[] {
  return [figures.reqPerSec.toFixed(0), figures.p50Ms.toFixed(2), figures.p99Ms.toFixed(2)];
}

function probeContext(tessera: ServerProcess, managementKey: string, settings: Settings): ProbeContext {
  let servers = 0;
  const handle = (server: ServerProcess) => {
    if (server.child.pid === undefined) throw new Error(`${server.name} has no process id`);
    return { context: { baseUrl: server.baseUrl, managementKey }, pid: server.child.pid };
  };
  return {
    tessera: handle(tessera),
    coldStarts: settings.coldStarts,
    async startTessera(env) {
      if (tempDir === undefined) throw new Error("another server runs inside the benchmark's directory");
      const dataDir = path.join(tempDir, `tessera-${++servers}`);
      await mkdir(dataDir);
      const server = await startTessera(dataDir, managementKey, undefined, env);
      return { ...handle(server), stop: () => retire(server) };
    },
    progress,
  };
}

async function main(settings: Settings): Promise<boolean> {
  const loadAtStart = loadAverage();
  const matches = (name: string) => settings.only === undefined || name.includes(settings.only);
  const selected = scenarios.filter((scenario) => matches(scenario.name));
  // The probes time reactors starting and their memory, which the store does not change.
  const selectedProbes: readonly Probe[] =
    settings.store === "sqlite" ? reactorProbes.filter((probe) => matches(probe.name)) : [];
  if (selected.length + selectedProbes.length === 0) {
    throw new Error(`no scenario name contains ${JSON.stringify(settings.only)}`);
  }

  tempDir = await mkdtemp(path.join(os.tmpdir(), "tessera-bench-"));
  // 36 random bytes are 48 base64url characters: above Tessera's minimum key length, and known to this run only.
  const managementKey = randomBytes(36).toString("base64url");
  // Room for every reactor this run creates, so that no measurement meets a full pool (which evicts workers
  // and stops keeping a spare); the default, 32, is kept when it is enough.
  if (settings.store === "postgres") database = await startDatabase();
  const storeEnv = database?.env ?? {};
  const tessera = await startTessera(tempDir, managementKey, settings.profileDir, {
    TESSERA_REACTOR_MAX_WORKERS: String(Math.max(32, workersNeeded(settings.coldStarts))),
    ...storeEnv,
  });

  const reports: ScenarioReport[] = [];
  for (const scenario of selected) {
    reports.push(await runScenario(scenario, tessera, managementKey, settings));
  }
  const scaling =
    settings.instances > 1 ? await runScaling(tessera, managementKey, storeEnv, settings) : undefined;
  const probeReports: ProbeReport[] = [];
  const context = probeContext(tessera, managementKey, settings);
  for (const probe of selectedProbes) {
    assertAlive(tessera);
    probeReports.push(await probe.run(context));
  }
  const loadAtEnd = loadAverage();

  process.stdout.write(
    `\n${header(settings)}\nload average (1, 5, 15 min): ${loads(loadAtStart)} at the start, ${loads(loadAtEnd)} at the end\n`,
  );
  if (reports.length > 0) process.stdout.write(`\n${table(reports, settings)}\n`);
  if (scaling !== undefined) process.stdout.write(`\n${scalingTable(scaling)}\n`);
  for (const report of probeReports) {
    process.stdout.write(
      `\n${report.table}\n${report.pass ? "" : `${report.name}: FAIL (${report.failures.join(", ")})\n`}`,
    );
  }
  for (const report of reports) {
    for (const [label, measured] of [
      ["ceiling", report.ceiling],
      ["Tessera", report.tessera],
      ...(report.reference === null ? [] : [[report.reference.name, report.reference.measured] as const]),
    ] as const) {
      for (const problem of measured.problems) process.stderr.write(`${report.name}, ${label}: ${problem}\n`);
    }
  }

  const pass = [...reports, ...probeReports].every((report) => report.pass) && (scaling?.pass ?? true);
  const cpus = os.cpus();
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform} ${os.release()} ${process.arch}`,
    cpus: { count: cpus.length, model: cpus[0]?.model.trim() },
    loadAverage: { start: loadAtStart, end: loadAtEnd },
    settings: { ...settings, pipelining: PIPELINING },
    ...(scaling !== undefined && { scaling }),
    scenarios: [
      ...reports,
      ...probeReports.map(({ name, kind, failures, pass, figures }) => ({
        kind,
        name,
        ...figures,
        failures,
        pass,
      })),
    ],
    pass,
  };
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`\nFigures per round: ${path.relative(process.cwd(), RESULTS_FILE)}\n`);
  return pass;
}

async function soak(soakSettings: SoakSettings): Promise<boolean> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "tessera-bench-"));
  tempDir = dir;
  return runSoak(
    soakSettings,
    {
      tempDir: dir,
      repoRoot: REPO_ROOT,
      startTessera: (name, dataDir, managementKey, env, nodeFlags) =>
        startTessera(dataDir, managementKey, undefined, env, name, nodeFlags),
      stop: retire,
      onCleanup(step) {
        undoSteps.add(step);
        return () => {
          if (undoSteps.delete(step)) step();
        };
      },
      progress,
      loadAverage,
    },
    SOAK_RESULTS_FILE,
  );
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
  runUndoSteps();
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
  process.exitCode = (await (settings.soak === undefined ? main(settings) : soak(settings.soak))) ? 0 : 1;
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
