import { spawn, spawnSync } from "node:child_process";
import { lookup } from "node:dns/promises";
import { chmodSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ReactorPool, type ReactorCode } from "./pool.js";
import { addressesOf } from "../../../test/special-ranges.js";
import { IPV4_SPECIAL_RANGES, IPV6_SPECIAL_RANGES } from "../../net/special-ranges.js";
import { BUILTIN_MODULES, DENO_NODE_BUILTINS } from "./modules.js";
import { denoBinary, workerLimits } from "./setup.js";
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

/**
 * Reactor code for the network tests: `attempt(run)` answers what `run` returns, `refused <host:port>` when Deno's
 * permission check refused it, or the error otherwise. fetch reports a refusal met after resolving a name as the
 * cause of a TypeError, so the whole chain is searched.
 */
const NETWORK_PROBE = `
  const attempt = async (run) => {
    try {
      return await run();
    } catch (error) {
      for (let e = error; e != null; e = e.cause) {
        const refused = /Requires net access to "([^"]+)"/.exec(String(e.message));
        if (refused !== null) return "refused " + refused[1];
      }
      return String(error.name) + ": " + String(error.message);
    }
  };`;

/** `address:port` as Deno writes it in a refusal, IPv6 addresses in brackets. */
function hostPort(address: string, port: number): string {
  return `${address.includes(":") ? `[${address}]` : address}:${port}`;
}

/**
 * The host's own addresses beside loopback; link-local ones with their interface (`fe80::1%eth0`), the only
 * spelling that reaches them.
 */
function ownAddresses(): { routable: string[]; linkLocal: string[] } {
  const addresses = Object.entries(os.networkInterfaces()).flatMap(([name, infos]) =>
    (infos ?? []).filter((info) => !info.internal).map((info) => ({ name, address: info.address })),
  );
  const isLinkLocal = (address: string) => address.startsWith("fe80");
  return {
    routable: addresses.filter(({ address }) => !isLinkLocal(address)).map(({ address }) => address),
    linkLocal: addresses
      .filter(({ address }) => isLinkLocal(address))
      .map(({ name, address }) => `${address}%${name}`),
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

  it("starts each worker with core dumps off, and as nobody when the server runs as root", async () => {
    const worker = await ReactorWorker.start(limits, "module.exports = async () => ({});", []);
    try {
      // A core dump would write the worker's memory, detokenized arguments included, to disk.
      const limitsFile = readFileSync(`/proc/${worker.pid}/limits`, "utf8");
      expect(limitsFile).toMatch(/^Max core file size\s+0\s+0\s+bytes/m);
      const uid = /^Uid:\s+(\d+)\s+(\d+)/m.exec(readFileSync(`/proc/${worker.pid}/status`, "utf8"));
      const expected = process.getuid?.() === 0 ? "65534" : String(process.getuid?.());
      expect([uid?.[1], uid?.[2]]).toEqual([expected, expected]);
    } finally {
      await worker.stop();
    }
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

  it("refuses loopback, link-local, private, numeric and aliased addresses, to connect and to listen", async () => {
    const port = targetPort;
    const loopback = `127.0.0.1:${port}`;
    // The host's own name: not on the deny-list as such, so only the check after resolving can refuse it.
    const alias = os.hostname();
    expect(limits.denyNet).not.toContain(alias);
    const aliasAddress = (await lookup(alias)).address;
    const own = ownAddresses().routable;
    // What Deno names when it refuses each host: every spelling of 127.0.0.1 comes down to it.
    const refusedAs: Record<string, string> = {
      [loopback]: loopback,
      [`2130706433:${port}`]: loopback,
      [`0x7f000001:${port}`]: loopback,
      [`127.1:${port}`]: loopback,
      [`0177.0.0.1:${port}`]: loopback,
      [`[::ffff:127.0.0.1]:${port}`]: loopback,
      [`localhost:${port}`]: `localhost:${port}`,
      [`${alias}:${port}`]: hostPort(aliasAddress, port),
      [`127.0.0.2:${port}`]: `127.0.0.2:${port}`,
      [`[::1]:${port}`]: `[::1]:${port}`,
      [`0.0.0.0:${port}`]: `0.0.0.0:${port}`,
      [`[::]:${port}`]: `[::]:${port}`,
      ...Object.fromEntries(own.map((address) => [hostPort(address, port), hostPort(address, port)])),
      "169.254.169.254": "169.254.169.254:80",
      "10.0.0.1": "10.0.0.1:80",
      "172.16.0.1": "172.16.0.1:80",
      "192.168.1.1": "192.168.1.1:80",
      "100.64.0.1": "100.64.0.1:80",
    };
    const listenOn = ["0.0.0.0", "127.0.0.1", "::", alias, ...own];
    const outcome = await pool.invoke(
      reactor(
        `${NETWORK_PROBE}
        module.exports = async ({ args }) => {
          const fetched = {};
          for (const host of args.hosts) {
            fetched[host] = await attempt(async () => {
              const response = await fetch("http://" + host + "/", { signal: AbortSignal.timeout(1000) });
              return "reached " + response.status;
            });
          }
          const listened = {};
          for (const hostname of args.listenOn) {
            listened[hostname] = await attempt(async () => {
              Deno.listen({ hostname, port: 0 }).close();
              return "listening";
            });
          }
          listened["http.Server"] = await attempt(
            () =>
              new Promise((resolve, reject) => {
                const server = require("http").createServer();
                server.once("error", reject);
                server.listen(0, () => server.close(() => resolve("listening")));
              }),
          );
          return { raw: { fetched, listened } };
        };`,
        ["http"],
      ),
      invocation({ hosts: Object.keys(refusedAs), listenOn }, { timeoutMs: 20_000 }),
    );
    const { fetched, listened } = raw(outcome) as Record<string, Record<string, string>>;
    // Refused by the permission check, not merely unanswered: a timeout or ECONNREFUSED would fail here.
    expect(fetched).toEqual(
      Object.fromEntries(Object.entries(refusedAs).map(([host, as]) => [host, `refused ${as}`])),
    );
    expect(listened).toEqual({
      "0.0.0.0": "refused 0.0.0.0:0",
      "127.0.0.1": "refused 127.0.0.1:0",
      "::": "refused [::]:0",
      [alias]: `refused ${hostPort(aliasAddress, 0)}`,
      ...Object.fromEntries(own.map((address) => [address, `refused ${hostPort(address, 0)}`])),
      "http.Server": "refused [::]:0",
    });
    expect(targetHits).toBe(0);
    // The control: outside the sandbox, localhost and every spelling refused as 127.0.0.1 reach the target, so the
    // permission check is all that stood between.
    const answering = [
      `localhost:${port}`,
      ...Object.keys(refusedAs).filter((h) => refusedAs[h] === loopback),
    ];
    for (const host of answering) {
      expect(await (await fetch(`http://${host}/`)).text(), host).toBe("internal");
    }
    expect(targetHits).toBe(answering.length);
  });

  it("sends Node's http and https requests through the network permission fetch goes through", async () => {
    // Node 16 code written for Basis Theory calls processors with require("https"): the same walls hold.
    const code = `${NETWORK_PROBE}
      const http = require("http");
      const https = require("https");
      const call = (module, url) => new Promise((resolve, reject) => {
        const request = module.request(url, { method: "POST", timeout: 3000 }, (response) => {
          response.resume();
          response.on("end", () => resolve("reached " + response.statusCode));
        });
        request.on("timeout", () => request.destroy(new Error("timed out")));
        request.on("error", reject);
        request.end("{}");
      });
      module.exports = async ({ args }) => {
        const outcomes = {};
        for (const [name, url] of Object.entries(args)) {
          outcomes[name] = await attempt(() => call(name.startsWith("https") ? https : http, url));
        }
        return { raw: outcomes };
      };`;
    const loopback = `127.0.0.1:${targetPort}`;
    const before = targetHits;
    const refused = await pool.invoke(
      reactor(code, ["http", "https"]),
      invocation({
        http: `http://${loopback}/`,
        https: `https://${loopback}/`,
        https_metadata: "https://169.254.169.254/latest/meta-data/",
        https_private: "https://10.0.0.1/",
      }),
    );
    expect(raw(refused)).toEqual({
      http: `refused ${loopback}`,
      https: `refused ${loopback}`,
      https_metadata: "refused 169.254.169.254:443",
      https_private: "refused 10.0.0.1:443",
    });
    expect(targetHits).toBe(before);

    // With a test-only allowance (as TESSERA_REACTOR_EGRESS allows a host), both reach their target: http gets its
    // answer, https its TCP connection (this target speaks no TLS, so the handshake fails once it has arrived).
    let connections = 0;
    const tls = net.createServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => tls.listen(0, "127.0.0.1", resolve));
    const tlsHost = `127.0.0.1:${(tls.address() as AddressInfo).port}`;
    const worker = await ReactorWorker.start(
      { ...limits, allowNet: `${loopback},${tlsHost}`, denyNet: ["10.0.0.0/8"] },
      code,
      ["http", "https"],
    );
    try {
      const allowed = await worker.invoke(
        invocation({ http: `http://${loopback}/`, https: `https://${tlsHost}/` }, { timeoutMs: 10_000 }),
      );
      const result = raw(allowed) as Record<string, string>;
      expect(result.http).toBe("reached 200");
      expect(result.https).not.toMatch(/^refused/);
      expect(targetHits).toBe(before + 1);
      expect(connections).toBe(1);
    } finally {
      worker.kill();
      await new Promise((resolve) => tls.close(resolve));
    }
  });

  it("refuses every special-purpose IPv4 and IPv6 range before a packet leaves, and IPv6 altogether", async () => {
    // Deno's permission check refuses the IPv4 ranges (and the IPv6 addresses it can name) before connecting; the
    // worker's seccomp filter refuses to create any IPv6 socket. Either way nothing is sent to these addresses.
    const targets = Object.fromEntries(
      [...IPV4_SPECIAL_RANGES, ...IPV6_SPECIAL_RANGES].map((range) => [
        range.cidr,
        addressesOf(range).inside,
      ]),
    );
    // Public IPv6 too: the filter takes the whole family away.
    targets["public IPv6"] = "2606:4700:4700::1111";
    const outcome = await pool.invoke(
      reactor(`${NETWORK_PROBE}
        const refusedFamily = async (run) => {
          try {
            return await run();
          } catch (error) {
            for (let e = error; e != null; e = e.cause) {
              if (/Address family not supported/.test(String(e.message))) return "no IPv6";
            }
            throw error;
          }
        };
        module.exports = async ({ args }) => {
          const entries = await Promise.all(Object.entries(args.targets).map(async ([cidr, address]) => {
            const host = address.includes(":") ? "[" + address + "]" : address;
            const fetched = await attempt(() => refusedFamily(async () => {
              const response = await fetch("http://" + host + "/", { signal: AbortSignal.timeout(2000) });
              return "reached " + response.status;
            }));
            const connected = await attempt(() => refusedFamily(async () => {
              (await Deno.connect({ hostname: address, port: 443 })).close();
              return "connected";
            }));
            return [cidr, { fetched, connected }];
          }));
          return { raw: Object.fromEntries(entries) };
        };`),
      invocation({ targets }, { timeoutMs: 20_000 }),
    );
    const result = raw(outcome) as Record<string, { fetched: string; connected: string }>;
    for (const [cidr, address] of Object.entries(targets)) {
      const refused = address.includes(":")
        ? /^(refused \[[0-9a-f:.]+\]:(80|443)|refused [0-9.]+:(80|443)|no IPv6)$/
        : new RegExp(`^refused ${address.replaceAll(".", "\\.")}:(80|443)$`);
      expect(result[cidr]?.fetched, `${cidr} fetch`).toMatch(refused);
      expect(result[cidr]?.connected, `${cidr} connect`).toMatch(refused);
    }
    // The IPv4 forms that Deno reads as IPv4 are refused by its permission check, as IPv4.
    expect(result["::ffff:0:0/96"]).toEqual({
      fetched: "refused 0.0.0.1:80",
      connected: "refused 0.0.0.1:443",
    });
    expect(result["fc00::/7"]).toEqual({ fetched: "no IPv6", connected: "no IPv6" });
    expect(result["public IPv6"]).toEqual({ fetched: "no IPv6", connected: "no IPv6" });
  });

  it("runs reactor code without FFI, the harness's one use of it done and revoked before the code loads", async () => {
    const outcome = await pool.invoke(
      reactor(`module.exports = async () => {
        let opened;
        try {
          Deno.dlopen(Deno.args[0], {});
          opened = "opened";
        } catch (error) {
          opened = error.name;
        }
        return { raw: {
          libc: typeof Deno.args[0],
          opened,
          state: Deno.permissions.querySync({ name: "ffi" }).state,
          requested: Deno.permissions.requestSync({ name: "ffi" }).state,
        } };
      };`),
      invocation({}),
    );
    expect(raw(outcome)).toEqual({
      libc: "string",
      opened: "NotCapable",
      state: "prompt",
      requested: "denied",
    });
  });

  // A host service listening on every interface (`::`) is reachable through `fe80::…%eth0` unless the host's  // A host service listening on every interface (`::`) is reachable through `fe80::…%eth0` unless the host's
  // link-local addresses are denied too.
  it.skipIf(ownAddresses().linkLocal.length === 0)(
    "refuses the host's IPv6 link-local addresses, to connect and to listen",
    async () => {
      const linkLocal = ownAddresses().linkLocal;
      // Stands for a host service on every interface (`::`), bound to the link-local address alone so that the
      // test opens nothing wider.
      const service = http.createServer((_req, res) => res.end("internal"));
      await new Promise<void>((resolve) => service.listen(0, linkLocal[0], resolve));
      const port = (service.address() as AddressInfo).port;
      try {
        const outcome = await pool.invoke(
          reactor(`${NETWORK_PROBE}
            module.exports = async ({ args }) => {
              const results = {};
              for (const hostname of args.linkLocal) {
                results["connect " + hostname] = await attempt(async () => {
                  (await Deno.connect({ hostname, port: args.port })).close();
                  return "connected";
                });
                results["listen " + hostname] = await attempt(async () => {
                  Deno.listen({ hostname, port: 0 }).close();
                  return "listening";
                });
              }
              return { raw: results };
            };`),
          invocation({ linkLocal, port }, { timeoutMs: 10_000 }),
        );
        const unscoped = (address: string) => address.replace(/%.*$/, "");
        expect(raw(outcome)).toEqual(
          Object.fromEntries(
            linkLocal.flatMap((address) => [
              [`connect ${address}`, `refused ${hostPort(unscoped(address), port)}`],
              [`listen ${address}`, `refused ${hostPort(unscoped(address), 0)}`],
            ]),
          ),
        );
      } finally {
        await new Promise((resolve) => service.close(resolve));
      }
    },
  );

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

  it("keeps reactors apart: hooks one reactor sets on what every reactor's code touches never see another's arguments", async () => {
    const own = "5555555555554444";
    // What reactor code commonly does with a card: split its digits, build a request body, keep the last four.
    const handle = `async ({ args }) => {
      const digits = [...args.card].map(Number);
      const request = {};
      request.card = args.card;
      const body = JSON.stringify(request);
      return { raw: { last4: args.card.slice(-4), digits: digits.length, body: body.length } };
    }`;
    // Hooks on what that code goes through (the harness's own copies of JSON.parse and JSON.stringify are out of
    // reach, and JSON.parse calls no setter); what they see is kept on the global for a later invocation to report.
    const thief = reactor(`
      const stolen = (globalThis.stolen ??= { slice: [], map: [], setter: [], stringify: [] });
      const { slice } = String.prototype;
      String.prototype.slice = function (...rest) {
        stolen.slice.push(String(this));
        return slice.apply(this, rest);
      };
      const { map, join } = Array.prototype;
      Array.prototype.map = function (...rest) {
        stolen.map.push(join.call(this, ""));
        return map.apply(this, rest);
      };
      Object.defineProperty(Object.prototype, "card", {
        set(value) {
          stolen.setter.push(String(value));
          Object.defineProperty(this, "card", { value, writable: true, enumerable: true, configurable: true });
        },
        configurable: true,
      });
      const { stringify } = JSON;
      JSON.stringify = (...rest) => {
        const text = stringify(...rest);
        stolen.stringify.push(String(text));
        return text;
      };
      const handle = ${handle};
      module.exports = async ({ args }) => (args.card === undefined ? { raw: stolen } : handle({ args }));`);
    const victim = reactor(`module.exports = ${handle};`);
    const heard = (captured: unknown, card: string) =>
      Object.fromEntries(
        Object.entries(captured as Record<string, string[]>).map(([hook, seen]) => [
          hook,
          seen.some((text) => text.includes(card)),
        ]),
      );

    expect(raw(await pool.invoke(thief, invocation({ card: own })))).toEqual({
      last4: "4444",
      digits: 16,
      body: 27,
    });
    expect(raw(await pool.invoke(victim, invocation({ card: SECRET })))).toEqual({
      last4: "4242",
      digits: 16,
      body: 27,
    });
    const stolen = raw(await pool.invoke(thief, invocation({})));
    // The control: in its own worker every hook caught the thief's own card and kept it for this invocation.
    expect(heard(stolen, own)).toEqual({ slice: true, map: true, setter: true, stringify: true });
    expect(heard(stolen, SECRET)).toEqual({ slice: false, map: false, setter: false, stringify: false });
  });

  it("clears the timers a reactor leaves behind when its load and its invocation end", async () => {
    const ticker = reactor(`
      const counts = { atLoad: 0, interval: 0, chain: 0, immediates: 0 };
      setInterval(() => counts.atLoad++, 25);
      module.exports = async ({ args }) => {
        if (args.start) {
          // A 25 ms interval that spends CPU, a timeout that keeps scheduling itself, an endless setImmediate.
          setInterval(() => {
            counts.interval++;
            for (const end = Date.now() + 5; Date.now() < end; );
          }, 25);
          const again = () => {
            counts.chain++;
            setTimeout(again, 25);
          };
          setTimeout(again, 25);
          const spin = () => {
            counts.immediates++;
            setImmediate(spin);
          };
          setImmediate(spin);
          // They run while the invocation does.
          await new Promise((resolve) => setTimeout(resolve, 200));
        }
        return { raw: { ...counts } };
      };`);
    const during = raw(await pool.invoke(ticker, invocation({ start: true }))) as Record<string, number>;
    expect(during.interval).toBeGreaterThan(0);
    expect(during.chain).toBeGreaterThan(0);
    expect(during.immediates).toBeGreaterThan(0);
    // The interval started while the code loaded was cleared once the load ended.
    expect(during.atLoad).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(raw(await pool.invoke(ticker, invocation({})))).toEqual(during);
  });

  it("gives reactor code no Web Workers and no handle on Deno's internals", async () => {
    const outcome = await pool.invoke(
      reactor(`module.exports = async () => {
        let created;
        try {
          new Worker("data:text/javascript,postMessage(1)", { type: "module" });
          created = "created";
        } catch (error) {
          created = error.name;
        }
        return { raw: {
          worker: typeof Worker,
          onGlobal: typeof globalThis.Worker,
          created,
          internals: typeof Deno[Deno.internal],
        } };
      };`),
      invocation({}),
    );
    expect(raw(outcome)).toEqual({
      worker: "undefined",
      onGlobal: "undefined",
      created: "ReferenceError",
      internals: "undefined",
    });
  });

  it("refuses import() of every Node built-in require refuses, whatever the spelling or the way the code is made", async () => {
    const allowed = new Set<string>(BUILTIN_MODULES);
    const specifiers = DENO_NODE_BUILTINS.flatMap((builtin) =>
      builtin.startsWith("node:") ? [builtin] : [builtin, `node:${builtin}`],
    );
    const outcome = await pool.invoke(
      reactor(`
        const attempt = (load) => load().then(
          (loaded) => "loaded " + Object.keys(loaded).length,
          (error) => error.message,
        );
        module.exports = async ({ args }) => {
          const direct = {};
          for (const specifier of args.specifiers) direct[specifier] = await attempt(() => import(specifier));
          return { raw: {
            direct,
            compiled: await attempt(() => new Function("return import('node:vm')")()),
            evaluated: await attempt(() => eval("import('child_process')")),
            fromModule: await attempt(() =>
              import("data:text/javascript," + encodeURIComponent('export default await import("node:net");')),
            ),
            statically: await attempt(() =>
              import("data:text/javascript," + encodeURIComponent('import wt from "worker_threads"; export { wt };')),
            ),
            required: (() => { try { return typeof require("vm"); } catch (error) { return error.message; } })(),
          } };
        };`),
      invocation({ specifiers }, { timeoutMs: 20_000 }),
    );
    const result = raw(outcome) as Record<string, unknown> & { direct: Record<string, string> };
    for (const specifier of specifiers) {
      const name = specifier.replace(/^node:/, "");
      if (allowed.has(name)) expect(result.direct[specifier], specifier).toMatch(/^loaded [1-9]/);
      else
        expect(result.direct[specifier], specifier).toBe(
          `Cannot import '${specifier}': not an allowed module`,
        );
    }
    expect(result).toMatchObject({
      compiled: "Cannot import 'node:vm': not an allowed module",
      evaluated: "Cannot import 'child_process': not an allowed module",
      fromModule: "Cannot import 'node:net': not an allowed module",
      statically: "Cannot import 'worker_threads': not an allowed module",
      required: "Cannot require 'vm': not an allowed module",
    });
  });

  it("keeps its own harness and import map when another server writes its own into the same directory", async () => {
    // A server with other npm packages (or another version of Tessera) sharing TESSERA_REACTOR_DIR.
    const other = await workerLimits({
      dir: path.join(dir, "deno"),
      modules: [{ name: "uuid", version: "11.1.1" }],
      egress: "",
      heapMiB: 64,
      rssMiB: 192,
      frameBytes: 1024 * 1024,
      logBytes: 16 * 1024,
      loadTimeoutMs: 15_000,
    });
    expect(other.importMap).not.toBe(limits.importMap);
    expect(other.harness).toBe(limits.harness);
    const code = `module.exports = async () => ({ raw: await import("uuid").then(
      (uuid) => typeof uuid.v4,
      () => "refused",
    ) });`;
    const mine = await ReactorWorker.start(limits, code, []);
    const theirs = await ReactorWorker.start(other, code, []);
    try {
      expect(raw(await mine.invoke(invocation({})))).toBe("refused");
      expect(raw(await theirs.invoke(invocation({})))).toBe("function");
    } finally {
      await Promise.all([mine.stop(), theirs.stop()]);
    }
  });

  it("knows every Node built-in the bundled Deno has", () => {
    const listed = spawnSync(
      denoBinary(),
      [
        "eval",
        "--no-config",
        "import { builtinModules } from 'node:module'; console.log(JSON.stringify(builtinModules))",
      ],
      {
        encoding: "utf8",
        env: { NO_COLOR: "1", DENO_NO_UPDATE_CHECK: "1", DENO_DIR: path.join(dir, "eval") },
      },
    );
    expect(listed.status, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as string[]).sort()).toEqual([...DENO_NODE_BUILTINS].sort());
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
