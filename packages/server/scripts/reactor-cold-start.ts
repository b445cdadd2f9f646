import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DEFAULT_MODULES } from "../src/reactors/sandbox/modules.js";
import { workerLimits } from "../src/reactors/sandbox/setup.js";
import { ReactorWorker, type Invocation } from "../src/reactors/sandbox/worker.js";

// Cold start of a reactor worker with and without each npm package, measured side by side (interleaved, so that
// the machine's noise falls on every case alike): docs/reactors.md quotes it.
//   node --import tsx packages/server/scripts/reactor-cold-start.ts [rounds]

const ROUNDS = Number(process.argv[2] ?? 15);
const CASES: Record<string, { code: string; modules: string[] }> = {
  "no package": { code: "module.exports = async () => ({ raw: 1 });", modules: [] },
  uuid: {
    code: "const { v4 } = require('uuid'); module.exports = async () => ({ raw: v4() });",
    modules: ["uuid"],
  },
  "node-fetch": {
    code: "const fetch = require('node-fetch'); module.exports = async () => ({ raw: typeof fetch });",
    modules: ["node-fetch"],
  },
  axios: {
    code: "const axios = require('axios'); module.exports = async () => ({ raw: typeof axios.get });",
    modules: ["axios"],
  },
};
const INVOCATION: Invocation = {
  args: {},
  configuration: {},
  svc: false,
  timeoutMs: 10_000,
  onRpc: () => Promise.reject(new Error("no svc")),
};

const dir = mkdtempSync(path.join(os.tmpdir(), "tessera-cold-start-"));
chmodSync(dir, 0o755);
try {
  const limits = await workerLimits({
    dir,
    modules: DEFAULT_MODULES,
    egress: "",
    heapMiB: 128,
    rssMiB: 384,
    frameBytes: 1024 * 1024,
    logBytes: 64 * 1024,
    loadTimeoutMs: 15_000,
  });
  /** Spawn to first result, and load on an already started worker (a pool's spare) to first result. */
  const cold: Record<string, number[]> = {};
  const spare: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, { code, modules }] of Object.entries(CASES)) {
      let started = performance.now();
      const worker = await ReactorWorker.start(limits, code, modules);
      await firstResult(worker);
      (cold[name] ??= []).push(performance.now() - started);

      const ready = await ReactorWorker.spawn(limits);
      await new Promise((resolve) => setTimeout(resolve, 150));
      started = performance.now();
      await ready.load(code, modules);
      await firstResult(ready);
      (spare[name] ??= []).push(performance.now() - started);
    }
  }
  // The machine's load says how much to trust the figures: compare cases within one run only.
  const load = os.loadavg().map((l) => l.toFixed(1));
  process.stdout.write(`${ROUNDS} rounds, load average ${load.join(" ")}; ms, p50 / p90 (min–max)\n`);
  process.stdout.write(`${"".padEnd(12)}${"spawn → first result".padEnd(28)}spare: load → first result\n`);
  for (const name of Object.keys(CASES)) {
    process.stdout.write(`${name.padEnd(12)}${summary(cold[name]!).padEnd(28)}${summary(spare[name]!)}\n`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

async function firstResult(worker: ReactorWorker): Promise<void> {
  const outcome = await worker.invoke(INVOCATION);
  worker.kill();
  if (outcome.kind !== "returned") throw new Error(`the reactor did not return: ${JSON.stringify(outcome)}`);
}

function summary(samples: number[]): string {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!);
  return `${at(0.5)} / ${at(0.9)} (${at(0)}–${at(1)})`;
}
