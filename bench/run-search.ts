// `npm run bench:search`: POST /tokens/search and POST /v2/tokens/search at a million tokens (issue 4, item 6;
// issue 18, item 2). Seeds a corpus (or reuses
// one from --data), starts the real server on it the way `npm start` does, and measures each search beside a bare
// Fastify ceiling answering a body of the same size, in alternating rounds, while sampling the server's RSS.
// Unlike `npm run bench`, the verdict is absolute latency (the targets); the ratio is reported to show
// how much of the time is the search rather than HTTP.
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
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
import type { LoadRequest } from "./scenarios.js";
import {
  answerProblem,
  answerProblemV2,
  searchRequest,
  searchScenarios,
  type SearchScenario,
} from "./search/scenarios.js";
import { formatDuration, readManifest, seedSearch, tesseraEnv, type SeedManifest } from "./search/seed.js";
import {
  assertEmpty,
  corpusSettings,
  onCleanUp,
  resolveTarget,
  runTool,
  type CorpusSettings,
  CORPUS_OPTIONS,
} from "./search/target.js";
import {
  freePort,
  httpRequest,
  isRunning,
  spawnServer,
  stopServer,
  waitUntilReady,
  type ServerProcess,
} from "./server.js";

const REPO_ROOT = fileURLToPath(new URL("..", import.meta.url));
const RESULTS_FILE = fileURLToPath(new URL("results-search.json", import.meta.url));
const PIPELINING = 1;
const MAX_RSS_MB = 400;
const RSS_SAMPLE_MS = 100;
const PROBE_TIMEOUT_MS = 120_000;

const USAGE = `Usage: npm run bench:search -- [options]

  --tokens <n>        corpus size (default 1000000)
  --store <kind>      sqlite (default) or postgres: TESSERA_DATABASE_URL, else a throwaway local cluster
  --data <dir>        keep the corpus in <dir> and reuse it in later runs (refused if it holds another
                      store, size or schema); default: a temporary directory, removed at exit
  --duration <s>      measured seconds per round (default 10)
  --warmup <s>        discarded warm-up seconds per server, before the first round (default 3)
  --rounds <n>        measured rounds per server, alternating ceiling and Tessera (default 2)
  --connections <n>   concurrent connections (default 10)
  --only <text>       run only the scenarios whose name contains <text>
  --profile <dir>     run the server under node --cpu-prof and write its CPU profile into <dir> when it stops
  -h, --help          show this help

The machine's 1-minute load average is reported beside each scenario: on a shared machine other work takes
CPU from both servers, so only figures measured side by side in one run compare.
`;

interface Settings extends CorpusSettings {
  readonly durationS: number;
  readonly warmupS: number;
  readonly rounds: number;
  readonly connections: number;
  readonly only?: string;
  readonly profileDir?: string;
}

function parseSettings(argv: string[]): Settings | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...CORPUS_OPTIONS,
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
    ...corpusSettings(values),
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

function progress(message: string): void {
  process.stderr.write(`${message}\n`);
}

/** Registers the process for the exit-time cleanup too, so that no server outlives an interrupted run. */
function track(server: ServerProcess): ServerProcess {
  onCleanUp(() => {
    if (isRunning(server)) server.child.kill("SIGKILL");
  });
  return server;
}

async function startTessera(env: Record<string, string>, profileDir?: string): Promise<ServerProcess> {
  const port = await freePort();
  // As in `npm run bench`: only the corpus's own settings, so the shell the run started from cannot change the
  // figures, and no NODE_ENV=production.
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => name !== "NODE_ENV" && !name.startsWith("TESSERA_")),
  );
  const server = track(
    spawnServer({
      name: "Tessera",
      // The profile is written when the server exits cleanly, which stopServer's SIGTERM lets it do.
      args: [
        ...(profileDir === undefined ? [] : ["--cpu-prof", `--cpu-prof-dir=${profileDir}`]),
        "packages/cli/bin/tessera.js",
        "serve",
      ],
      cwd: REPO_ROOT,
      env: {
        ...inherited,
        ...env,
        TESSERA_PORT: String(port),
        TESSERA_HOST: "127.0.0.1",
        TESSERA_LOG_LEVEL: "warn",
        // One key from one address at thousands a second: with the limits on, this would measure the limiter.
        TESSERA_RATE_LIMIT_KEY_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_ADDRESS_PER_SECOND: "0",
        TESSERA_RATE_LIMIT_DATA_TERMS_PER_MINUTE: "0",
      },
      port,
    }),
  );
  await waitUntilReady(server, "/readyz", 120_000);
  return server;
}

async function startCeiling(bodyBytes: number): Promise<ServerProcess> {
  const port = await freePort();
  const server = track(
    spawnServer({
      name: "ceiling",
      args: ["--import", "tsx", "bench/ceiling.ts", String(port), String(bodyBytes)],
      cwd: REPO_ROOT,
      env: process.env,
      port,
    }),
  );
  await waitUntilReady(server, "/");
  const probe = await httpRequest(`${server.baseUrl}/`);
  if (probe.body.length !== bodyBytes) {
    throw new Error(`the ceiling answered ${probe.body.length} bytes instead of ${bodyBytes}`);
  }
  return server;
}

/** The peak resident set of a process, sampled from /proc while the rounds run (Linux only). */
function sampleRss(pid: number) {
  let peakKb = 0;
  const sample = () => {
    try {
      const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (match !== null) peakKb = Math.max(peakKb, Number(match[1]));
    } catch {
      // The process has exited; the peak so far stands.
    }
  };
  sample();
  const timer = setInterval(sample, RSS_SAMPLE_MS);
  return {
    peakMb: () => peakKb / 1024,
    stop: () => clearInterval(timer),
  };
}

async function searchOnce(tessera: ServerProcess, request: LoadRequest): Promise<string> {
  const response = await httpRequest(tessera.baseUrl + request.path, {
    ...request,
    timeoutMs: PROBE_TIMEOUT_MS,
  });
  const text = response.body.toString("utf8");
  if (response.status !== 200) throw new Error(`${request.path} answered HTTP ${response.status}: ${text}`);
  return text;
}

/** The cursor of a v2 scenario's page: the `next` of the page before it, reached by walking from the first. */
async function cursorTo(
  scenario: SearchScenario,
  tessera: ServerProcess,
  key: string,
): Promise<string | undefined> {
  let start: string | undefined;
  for (let page = 1; page < scenario.page; page++) {
    const answer = JSON.parse(await searchOnce(tessera, searchRequest(scenario, key, start))) as {
      pagination: { next: string | null };
    };
    if (answer.pagination.next === null) throw new Error(`${scenario.name}: the walk ended at page ${page}`);
    start = answer.pagination.next;
  }
  if (scenario.page > 1) progress(`${scenario.name}: walked ${scenario.page - 1} pages by cursor`);
  return start;
}

/** v1 answers are checked against the corpus; v2 answers against v1's page of the same number, itself checked. */
async function checkAnswer(
  scenario: SearchScenario,
  text: string,
  tessera: ServerProcess,
  key: string,
): Promise<string | undefined> {
  if (scenario.api === "v1") return answerProblem(scenario, text);
  const v1 = { ...scenario, api: "v1" as const };
  const reference = await searchOnce(tessera, searchRequest(v1, key));
  const problem = answerProblem(v1, reference);
  if (problem !== undefined) return `v1's page, the reference, is wrong: ${problem}`;
  const ids = (JSON.parse(reference) as { data: { id: string }[] }).data.map((token) => token.id);
  return answerProblemV2(scenario, text, ids);
}

interface ScenarioReport {
  readonly name: string;
  readonly query: string;
  readonly page: number;
  readonly size: number;
  readonly bodyBytes: number;
  readonly expectedTotal: number;
  readonly maxP50Ms: number;
  readonly maxP99Ms: number | null;
  readonly ceiling: Measured;
  readonly tessera: Measured;
  readonly ratio: number;
  /** The machine's 1-minute load average at the start of each Tessera round. */
  readonly loadAverages: number[];
  /** Why the scenario failed ("answer", "errors", "p50", "p99"); empty when it passed. */
  readonly failures: string[];
  readonly answerProblem: string | null;
  readonly pass: boolean;
}

async function runScenario(
  scenario: SearchScenario,
  tessera: ServerProcess,
  manifest: SeedManifest,
  settings: Settings,
): Promise<ScenarioReport> {
  const start = scenario.api === "v2" ? await cursorTo(scenario, tessera, manifest.searchKey) : undefined;
  const request = searchRequest(scenario, manifest.searchKey, start);
  const url = tessera.baseUrl + request.path;
  // The server may still be working through the previous scenario's last requests, so the probe waits longer.
  const probe = await httpRequest(url, { ...request, timeoutMs: PROBE_TIMEOUT_MS });
  const text = probe.body.toString("utf8");
  if (probe.status !== request.expectedStatus) {
    throw new Error(`${scenario.name} answered HTTP ${probe.status}, expected 200: ${text}`);
  }
  const wrong = (await checkAnswer(scenario, text, tessera, manifest.searchKey)) ?? null;
  if (wrong !== null) progress(`${scenario.name}: WRONG ANSWER: ${wrong}`);

  const ceilingServer = await startCeiling(probe.body.length);
  try {
    // The same method, headers and body as the search, so only the work behind the route differs.
    const ceilingRequest: LoadRequest = { ...request, path: "/" };
    const load = { connections: settings.connections, pipelining: PIPELINING };
    const targets = [
      {
        label: "ceiling",
        url: `${ceilingServer.baseUrl}/`,
        request: ceilingRequest,
        rounds: [] as RoundFigures[],
      },
      { label: "Tessera", url, request, rounds: [] as RoundFigures[] },
    ] as const;
    for (const target of targets) {
      if (settings.warmupS === 0) break;
      progress(`${scenario.name}: warming up ${target.label} for ${settings.warmupS} s`);
      await runLoad(target.url, target.request, { ...load, durationS: settings.warmupS });
    }
    // Alternating spreads the machine's background noise over both targets.
    const loadAverages: number[] = [];
    for (let round = 1; round <= settings.rounds; round++) {
      for (const target of targets) {
        const load1 = os.loadavg()[0]!;
        if (target.label === "Tessera") loadAverages.push(load1);
        for (const server of [tessera, ceilingServer]) {
          if (!isRunning(server))
            throw new Error(`${server.name} exited during the benchmark:\n${server.output()}`);
        }
        const figures = await runLoad(target.url, target.request, { ...load, durationS: settings.durationS });
        target.rounds.push(figures);
        progress(
          `${scenario.name}: round ${round}/${settings.rounds} ${target.label}: ${figures.reqPerSec.toFixed(0)} req/s, ` +
            `p50 ${figures.p50Ms.toFixed(2)} ms, p99 ${figures.p99Ms.toFixed(2)} ms, load ${load1.toFixed(2)}`,
        );
      }
    }
    const [ceiling, tesseraFigures] = targets.map((target): Measured => ({
      rounds: target.rounds,
      median: medians(target.rounds),
      problems: target.rounds.flatMap((figures, i) =>
        roundProblems(figures, target.request.expectedStatus).map((problem) => `round ${i + 1}: ${problem}`),
      ),
    })) as [Measured, Measured];
    const failures: string[] = [];
    if (wrong !== null) failures.push("answer");
    if (ceiling.problems.length + tesseraFigures.problems.length > 0) failures.push("errors");
    if (!(tesseraFigures.median.p50Ms <= scenario.maxP50Ms)) failures.push("p50");
    if (scenario.maxP99Ms !== undefined && !(tesseraFigures.median.p99Ms <= scenario.maxP99Ms)) {
      failures.push("p99");
    }
    return {
      name: scenario.name,
      query: scenario.query,
      page: scenario.page,
      size: scenario.size,
      bodyBytes: probe.body.length,
      expectedTotal: scenario.expectedTotal,
      maxP50Ms: scenario.maxP50Ms,
      maxP99Ms: scenario.maxP99Ms ?? null,
      ceiling,
      tessera: tesseraFigures,
      ratio: tesseraFigures.median.reqPerSec / ceiling.median.reqPerSec,
      loadAverages,
      failures,
      answerProblem: wrong,
      pass: failures.length === 0,
    };
  } finally {
    await stopServer(ceilingServer);
  }
}

function table(reports: readonly ScenarioReport[], rssPeakMb: number): string {
  const head = [
    "scenario",
    "req/s (median)",
    "p50 ms",
    "p99 ms",
    "ratio to ceiling",
    "load avg",
    "target",
    "result",
  ];
  const cells = (figures: MedianFigures) => [
    // The slowest searches manage a request or two per second, where a rounded figure would say nothing.
    figures.reqPerSec.toFixed(figures.reqPerSec < 100 ? 1 : 0),
    figures.p50Ms.toFixed(2),
    figures.p99Ms.toFixed(2),
  ];
  const body: string[][] = reports.flatMap((report) => [
    [
      `ceiling: bare Fastify, ${report.bodyBytes} B JSON`,
      ...cells(report.ceiling.median),
      "1.00",
      "",
      "",
      "",
    ],
    [
      report.name,
      ...cells(report.tessera.median),
      report.ratio.toFixed(2),
      report.loadAverages.map((load) => load.toFixed(1)).join(", "),
      [
        `p50 ≤ ${report.maxP50Ms} ms`,
        ...(report.maxP99Ms === null ? [] : [`p99 ≤ ${report.maxP99Ms} ms`]),
      ].join(", "),
      report.pass ? "pass" : `FAIL (${report.failures.join(", ")})`,
    ],
  ]);
  body.push([
    "server RSS, peak",
    `${rssPeakMb.toFixed(0)} MB`,
    "",
    "",
    "",
    "",
    `≤ ${MAX_RSS_MB} MB`,
    rssPeakMb <= MAX_RSS_MB ? "pass" : "FAIL",
  ]);
  const widths = head.map((title, column) =>
    Math.max(title.length, ...body.map((row) => row[column]?.length ?? 0)),
  );
  const line = (row: string[]) => row.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join(" | ");
  return [line(head), widths.map((width) => "-".repeat(width)).join("-|-"), ...body.map(line)].join("\n");
}

async function main(argv: string[]): Promise<number> {
  let settings: Settings | undefined;
  try {
    settings = parseSettings(argv);
  } catch (error) {
    process.stderr.write(`bench:search: ${(error as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (settings === undefined) {
    process.stdout.write(USAGE);
    return 0;
  }
  const { target } = await resolveTarget(settings.store, settings.dataDir);
  let manifest = await readManifest(target, settings.tokens);
  if (manifest === undefined) {
    assertEmpty(target.dir);
    manifest = await seedSearch({ target, tokens: settings.tokens, progress: process.stderr });
  } else {
    progress(`reusing the corpus in ${target.dir} (seeded ${manifest.seededAt})`);
  }
  const { only } = settings;
  const selected = searchScenarios(manifest).filter((s) => only === undefined || s.name.includes(only));
  if (selected.length === 0) throw new Error(`no scenario name contains ${JSON.stringify(only)}`);

  const tessera = await startTessera(tesseraEnv(target), settings.profileDir);
  const loadAtStart = os.loadavg();
  const rss = sampleRss(tessera.child.pid!);
  const reports: ScenarioReport[] = [];
  try {
    for (const scenario of selected) reports.push(await runScenario(scenario, tessera, manifest, settings));
  } finally {
    rss.stop();
    await stopServer(tessera);
  }
  const rssPeakMb = rss.peakMb();
  const loadAtEnd = os.loadavg();
  const loads = (averages: number[]) => averages.map((load) => load.toFixed(2)).join(" / ");

  const cpus = os.cpus();
  const header =
    `Tessera search benchmark: ${manifest.tokens.toLocaleString("en-US")} tokens on ${settings.store} ` +
    `(seeded in ${formatDuration(manifest.seconds)}, ${Math.round(manifest.tokensPerSecond).toLocaleString("en-US")} tokens/s), ` +
    `node ${process.version}, ${cpus.length} CPUs (${cpus[0]?.model.trim() ?? "unknown"}), ` +
    `${settings.connections} connections, pipelining ${PIPELINING}, ${settings.durationS} s per round after ` +
    `${settings.warmupS} s warm-up, median of ${settings.rounds} alternating rounds; load average (1/5/15 min) ` +
    `${loads(loadAtStart)} at the start, ${loads(loadAtEnd)} at the end`;
  process.stdout.write(`\n${header}\n\n${table(reports, rssPeakMb)}\n`);
  for (const report of reports) {
    for (const [label, measured] of [
      ["ceiling", report.ceiling],
      ["Tessera", report.tessera],
    ] as const) {
      for (const problem of measured.problems) process.stderr.write(`${report.name}, ${label}: ${problem}\n`);
    }
    if (report.answerProblem !== null)
      process.stderr.write(`${report.name}: wrong answer: ${report.answerProblem}\n`);
  }

  const pass = reports.every((report) => report.pass) && rssPeakMb <= MAX_RSS_MB;
  const { searchKey: _key, ...corpus } = manifest;
  const results = {
    date: new Date().toISOString(),
    node: process.version,
    platform: `${process.platform} ${os.release()} ${process.arch}`,
    cpus: { count: cpus.length, model: cpus[0]?.model.trim() },
    settings: { ...settings, pipelining: PIPELINING },
    corpus,
    scenarios: reports,
    rssPeakMb,
    maxRssMb: MAX_RSS_MB,
    loadAverage: { start: loadAtStart, end: loadAtEnd },
    pass,
  };
  await writeFile(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
  process.stdout.write(`\nFigures per round: ${path.relative(process.cwd(), RESULTS_FILE)}\n`);
  if (settings.profileDir !== undefined) process.stdout.write(`Server CPU profile: ${settings.profileDir}\n`);
  return pass ? 0 : 1;
}

await runTool("bench:search", () => main(process.argv.slice(2)));
