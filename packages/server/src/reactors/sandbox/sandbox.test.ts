import { spawn } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReactorPool, type ReactorCode } from "./pool.js";
import { workerLimits } from "./setup.js";
import {
  ReactorLoadError,
  ReactorWorker,
  type Invocation,
  type Outcome,
  type WorkerLimits,
} from "./worker.js";

// The sandbox does not touch the store, so it runs in one project only; the endpoints' tests run on both.
const ONCE = process.env.TESSERA_TEST_STORE === "postgres";

const SECRET = "4242424242424242";
const TIMEOUT_MS = 1_500;

function invocation(args: unknown, overrides: Partial<Invocation> = {}): Invocation {
  return {
    args,
    configuration: { region: "eu" },
    svc: false,
    timeoutMs: TIMEOUT_MS,
    onRpc: () => Promise.reject(new Error("no svc in this test")),
    ...overrides,
  };
}

let reactorCount = 0;
function reactor(code: string, modules: string[] = []): ReactorCode {
  return { key: `reactor-${++reactorCount}`, code, modules };
}

/** The value a reactor returned as `raw`, failing the test on any other outcome. */
function raw(outcome: Outcome): unknown {
  if (outcome.kind !== "returned") throw new Error(`expected a result, got ${JSON.stringify(outcome)}`);
  return outcome.value.raw;
}

function processState(pid: number): string | undefined {
  try {
    return /^State:\s+(\w)/m.exec(readFileSync(`/proc/${pid}/status`, "latin1"))?.[1];
  } catch {
    return undefined;
  }
}

describe.skipIf(ONCE)("reactor sandbox", () => {
  let dir: string;
  let limits: WorkerLimits;
  let pool: ReactorPool;
  let target: http.Server;
  let targetHits = 0;
  let targetPort: number;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tessera-sandbox-"));
    // Workers run as nobody when the tests run as root: the harness must be reachable for them.
    chmodSync(dir, 0o755);
    limits = await workerLimits({
      dir: path.join(dir, "deno"),
      modules: [],
      egress: "",
      heapMiB: 64,
      rssMiB: 192,
      frameBytes: 1024 * 1024,
      logBytes: 16 * 1024,
      loadTimeoutMs: 15_000,
    });
    pool = new ReactorPool({ limits, maxWorkers: 12, workersPerReactor: 2, idleMs: 60_000, spares: 1 });
    // Stands for an internal service on the host: no reactor may ever reach it.
    target = http.createServer((_req, res) => {
      targetHits++;
      res.end("internal");
    });
    await new Promise<void>((resolve) => target.listen(0, "127.0.0.1", resolve));
    targetPort = (target.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await pool?.close();
    await new Promise((resolve) => target?.close(resolve));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("runs the exported function with args and configuration, captures console output, and calls svc over RPC", async () => {
    const calls: [string, unknown[]][] = [];
    const outcome = await pool.invoke(
      reactor(`
        module.exports = async function ({ args, configuration, svc }) {
          console.log("card ends in", args.card.slice(-4));
          const token = await svc.tokens.create({ type: "token", data: args.card });
          return { raw: { region: configuration.region, token } };
        };`),
      invocation(
        { card: SECRET },
        {
          svc: true,
          onRpc: async (method, params) => {
            calls.push([method, params]);
            return { id: "t-1" };
          },
        },
      ),
    );
    expect(outcome).toMatchObject({
      kind: "returned",
      value: { raw: { region: "eu", token: { id: "t-1" } } },
      logs: [{ level: "info", text: "card ends in 4242" }],
    });
    expect(calls).toEqual([["tokens.create", [{ type: "token", data: SECRET }]]]);
  });

  it("maps thrown reactor errors to their status and errors, under the Basis Theory module name", async () => {
    const outcome = await pool.invoke(
      reactor(
        `const { BadRequestError } = require("@basis-theory/basis-theory-reactor-formulas-sdk-js");
         module.exports = async () => { throw new BadRequestError({ card: ["expired"] }); };`,
        ["@basis-theory/basis-theory-reactor-formulas-sdk-js"],
      ),
      invocation({}),
    );
    expect(outcome).toMatchObject({
      kind: "threw",
      error: { name: "BadRequestError", message: "Bad Request", status: 400, errors: { card: ["expired"] } },
    });
  });

  it("reports code that does not export a function, or throws while loading, as a load error", async () => {
    await expect(ReactorWorker.start(limits, "module.exports = 42;", [])).rejects.toThrow(
      new ReactorLoadError({ name: "Error", message: "The reactor code must export a function" }),
    );
    await expect(ReactorWorker.start(limits, "throw new TypeError('bad config');", [])).rejects.toMatchObject(
      {
        thrown: { name: "TypeError", message: "bad config" },
      },
    );
  });

  it("gives reactor code no environment, files, /proc, processes, FFI or process.binding", async () => {
    const attempt = (label: string, body: string) =>
      `${JSON.stringify(label)}: (() => { try { return { got: ${body} }; } catch (e) { return { refused: e.name }; } })()`;
    const outcome = await pool.invoke(
      reactor(`module.exports = async () => ({ raw: {
        ${attempt("env", "Deno.env.toObject()")},
        ${attempt("processEnv", "process.env")},
        ${attempt("file", "Deno.readTextFileSync('/etc/passwd')")},
        ${attempt("environ", "Deno.readTextFileSync('/proc/self/environ')")},
        ${attempt("listRoot", "Deno.readDirSync('/').next()")},
        ${attempt("spawn", "new Deno.Command('/bin/sh', { args: ['-c', 'id'] }).outputSync()")},
        ${attempt("ffi", "Deno.dlopen('libc.so.6', {})")},
        ${attempt("binding", "Object.entries(process.binding('fs')).filter(([, v]) => typeof v === 'function').length")},
        ${attempt("spawnBinding", "Object.keys(process.binding('spawn_sync')).length")},
        ${attempt("write", "Deno.writeTextFileSync('/tmp/tessera-escape', 'x')")},
      } });`),
      invocation({}),
    );
    const result = raw(outcome) as Record<string, { got?: unknown; refused?: string }>;
    // Deno hides the environment (--ignore-env) rather than refusing it: nothing of the server's is there.
    expect(result.env).toEqual({ got: {} });
    expect(Object.keys(result.processEnv?.got ?? {})).toEqual([]);
    // Deno's process.binding is a stub: whatever it answers holds nothing to call.
    for (const label of ["binding", "spawnBinding"]) {
      expect([undefined, 0], label).toContain(result[label]?.got);
    }
    for (const label of ["file", "environ", "listRoot", "spawn", "ffi", "write"]) {
      expect(result[label], label).toHaveProperty("refused");
      expect(result[label]?.refused, label).toMatch(/NotCapable|Error/);
    }
  });

  it("gains nothing through the Function constructor: the global it reaches is the worker's own", async () => {
    const outcome = await pool.invoke(
      reactor(`module.exports = async function () {
        const g = this.constructor.constructor("return this")() ?? (() => {}).constructor("return this")();
        let env, file;
        try { env = g.Deno.env.toObject(); } catch (e) { env = e.name; }
        try { file = g.Deno.readTextFileSync("/etc/hostname"); } catch (e) { file = e.name; }
        return { raw: { hasRequire: typeof g.require, hasProcessMain: typeof g.process?.mainModule, env, file } };
      };`),
      invocation({}),
    );
    expect(raw(outcome)).toEqual({
      hasRequire: "undefined",
      hasProcessMain: "undefined",
      env: {},
      file: "NotCapable",
    });
  });

  it("refuses loopback, link-local, private, numeric and aliased addresses", async () => {
    const hosts = [
      `127.0.0.1:${targetPort}`,
      `localhost:${targetPort}`,
      `2130706433:${targetPort}`,
      `0x7f000001:${targetPort}`,
      `127.1:${targetPort}`,
      `0177.0.0.1:${targetPort}`,
      `[::1]:${targetPort}`,
      `[::ffff:127.0.0.1]:${targetPort}`,
      `0.0.0.0:${targetPort}`,
      "169.254.169.254",
      "10.0.0.1",
      "192.168.1.1",
      "172.16.0.1",
    ];
    const outcome = await pool.invoke(
      reactor(`module.exports = async ({ args }) => {
        const results = {};
        for (const host of args.hosts) {
          try {
            const response = await fetch("http://" + host + "/", { signal: AbortSignal.timeout(1000) });
            results[host] = "reached " + response.status;
          } catch (e) {
            results[host] = e.name;
          }
        }
        return { raw: results };
      };`),
      invocation({ hosts }, { timeoutMs: 20_000 }),
    );
    const results = raw(outcome) as Record<string, string>;
    for (const host of hosts) expect(results[host], host).not.toMatch(/^reached/);
    expect(results[`127.0.0.1:${targetPort}`]).toBe("NotCapable");
    expect(results["169.254.169.254"]).toBe("NotCapable");
    expect(targetHits).toBe(0);
  });

  it("kills a reactor spinning forever at its timeout while other reactors keep answering", async () => {
    const spinner = reactor("module.exports = async () => { while (true) {} };");
    const echo = reactor("module.exports = async ({ args }) => ({ raw: args });");
    await pool.invoke(echo, invocation({ warm: true }));
    const started = Date.now();
    const spinning = pool.invoke(spinner, invocation({}, { timeoutMs: 1_000 }));
    // While the spinner burns its own process, another reactor answers.
    const answered = await pool.invoke(echo, invocation({ during: true }));
    expect(raw(answered)).toEqual({ during: true });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(await spinning).toMatchObject({ kind: "timed-out", cold: true });
    expect(Date.now() - started).toBeLessThan(3_000);
    // The next call gets a fresh worker.
    const again = await pool.invoke(spinner, invocation({}, { timeoutMs: 300 }));
    expect(again).toMatchObject({ kind: "timed-out", cold: true });
  });

  it("ends a heap bomb, a 1.5 GB allocation and a written 2 GB Buffer.alloc as crashes, and the reactor works again afterwards", async () => {
    const bomb = reactor(`module.exports = async ({ args }) => {
      if (args.ok) return { raw: "fine" };
      const hoard = [];
      for (;;) hoard.push(new Array(1e5).fill(Math.random()));
    };`);
    const heap = await pool.invoke(bomb, invocation({}, { timeoutMs: 20_000 }));
    expect(heap).toMatchObject({ kind: "crashed", reason: "the reactor ran out of memory or crashed" });
    expect(raw(await pool.invoke(bomb, invocation({ ok: true })))).toBe("fine");

    // Outside the JS heap, so --max-old-space-size does not see it; the RSS watchdog does.
    const buffer = await pool.invoke(
      reactor(
        "module.exports = async () => { const b = new Uint8Array(1.5 * 2 ** 30); b.fill(1); return { raw: b.length }; };",
      ),
      invocation({}, { timeoutMs: 20_000 }),
    );
    expect(buffer).toMatchObject({ kind: "crashed" });
    if (buffer.kind === "crashed") expect(buffer.reason).toMatch(/more than 192 MiB|ran out of memory/);

    // Node's Buffer.alloc of 2 GB: zero-filled memory comes from the kernel untouched, so it costs nothing
    // until it is written (and returns), and the watchdog ends the worker as soon as it is.
    const twoGb = (fill: boolean) =>
      reactor(
        `module.exports = async () => { const b = Buffer.alloc(2 * 2 ** 30); ${fill ? "b.fill(1); " : ""}return { raw: b.length }; };`,
      );
    expect(raw(await pool.invoke(twoGb(false), invocation({}, { timeoutMs: 20_000 })))).toBe(2 * 2 ** 30);
    const filled = await pool.invoke(twoGb(true), invocation({}, { timeoutMs: 20_000 }));
    expect(filled).toMatchObject({ kind: "crashed" });
    if (filled.kind === "crashed") expect(filled.reason).toMatch(/more than 192 MiB|ran out of memory/);
  });

  it("caps captured logs and refuses a result over the frame limit", async () => {
    const flood = await pool.invoke(
      reactor(
        `module.exports = async () => { for (let i = 0; i < 50000; i++) console.log("line " + i + " ".repeat(100)); return { raw: "done" }; };`,
      ),
      invocation({}, { timeoutMs: 20_000 }),
    );
    expect(raw(flood)).toBe("done");
    const kept = flood.logs.reduce((sum, log) => sum + log.text.length, 0);
    expect(kept).toBeLessThanOrEqual(16 * 1024);
    expect(flood.logs.length).toBeGreaterThan(0);

    const big = reactor(
      `module.exports = async ({ args }) => ({ raw: "x".repeat(args.mib * 1024 * 1024) });`,
    );
    expect(await pool.invoke(big, invocation({ mib: 5 }, { timeoutMs: 20_000 }))).toMatchObject({
      kind: "crashed",
      reason: "the reactor's output exceeded 1048576 bytes",
    });
    // 50 MB does not even reach the pipe: serialising it exhausts the worker's 64 MiB heap first.
    expect(await pool.invoke(big, invocation({ mib: 50 }, { timeoutMs: 20_000 }))).toMatchObject({
      kind: "crashed",
    });
  });

  it("ignores protocol lines forged by reactor code", async () => {
    const outcome = await pool.invoke(
      reactor(`module.exports = async () => {
        const line = JSON.stringify({ n: "guess", t: "result", invocation: 1, ok: true, value: { raw: "forged" } });
        Deno.stdout.writeSync(new TextEncoder().encode(line + "\\n"));
        Deno.stdout.writeSync(new TextEncoder().encode(JSON.stringify({ t: "result", invocation: 1, ok: true, value: { raw: "forged" } }) + "\\n"));
        await new Promise((r) => setTimeout(r, 50));
        return { raw: "real" };
      };`),
      invocation({}),
    );
    expect(raw(outcome)).toBe("real");
  });

  it("keeps reactors apart: code that hooks globals in one reactor never sees another reactor's arguments", async () => {
    const thief = reactor(`
      const seen = [];
      const parse = JSON.parse;
      JSON.parse = (text, ...rest) => { seen.push(String(text)); return parse(text, ...rest); };
      Object.defineProperty(Object.prototype, "card", { set(v) { seen.push(String(v)); }, configurable: true });
      module.exports = async () => ({ raw: seen.join("|") });`);
    const victim = reactor("module.exports = async ({ args }) => ({ raw: args.card.slice(-4) });");
    await pool.invoke(thief, invocation({}));
    expect(raw(await pool.invoke(victim, invocation({ card: SECRET })))).toBe("4242");
    expect(raw(await pool.invoke(thief, invocation({})))).not.toContain(SECRET);
  });

  it("runs workers as an unprivileged user when the server runs as root", async () => {
    const pids = await pool.pids();
    expect(pids.length).toBeGreaterThan(0);
    const uid = /^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pids[0]}/status`, "latin1"))?.[1];
    expect(Number(uid)).toBe(process.getuid?.() === 0 ? 65534 : process.getuid?.());
  });

  it("never outlives a server killed with SIGKILL", async () => {
    // A stand-in server: a Node process that starts a spinning worker, prints its pid, and is then killed.
    const script = `
      import { ReactorWorker } from ${JSON.stringify(new URL("./worker.ts", import.meta.url).href)};
      const limits = JSON.parse(process.env.LIMITS);
      const worker = await ReactorWorker.start(limits, "module.exports = async () => { while (true) {} };", []);
      void worker.invoke({ args: {}, configuration: {}, svc: false, timeoutMs: 600000, onRpc: async () => null });
      process.stdout.write(worker.pid + "\\n");`;
    const server = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      env: { ...process.env, LIMITS: JSON.stringify(limits) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const workerPid = await new Promise<number>((resolve, reject) => {
        server.stdout.on("data", (chunk: Buffer) => resolve(Number(chunk.toString().trim())));
        server.once("exit", (code) => reject(new Error(`the stand-in server exited with ${code}`)));
      });
      expect(processState(workerPid)).toMatch(/R|S/);
      server.kill("SIGKILL");
      const deadline = Date.now() + 5_000;
      while (!["Z", undefined].includes(processState(workerPid)) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      // Gone, or a zombie waiting for init to reap it: either way no longer running reactor code.
      expect(["Z", undefined]).toContain(processState(workerPid));
    } finally {
      if (server.exitCode === null) server.kill("SIGKILL");
    }
  });
});
