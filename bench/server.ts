// Starting, probing and stopping the processes under test: servers, and the one-shot storage ceiling.
import { spawn, type ChildProcess } from "node:child_process";
import http from "node:http";
import net from "node:net";

/** A Node process this benchmark started; only these are ever signalled. */
export interface BenchProcess {
  readonly name: string;
  readonly child: ChildProcess;
  /** Settles when the process has exited, whoever ended it. */
  readonly exited: Promise<void>;
  /** The last few kilobytes the process wrote, to explain a failed start. */
  output(): string;
}

export interface ServerProcess extends BenchProcess {
  readonly baseUrl: string;
}

export interface ProcessOptions {
  readonly name: string;
  readonly args: readonly string[];
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
}

export interface SpawnOptions extends ProcessOptions {
  readonly port: number;
}

const OUTPUT_TAIL_CHARS = 8192;

export function spawnServer(options: SpawnOptions): ServerProcess {
  return { ...spawnProcess(options), baseUrl: `http://127.0.0.1:${options.port}` };
}

/** Runs `process.execPath` with `args`; the caller decides whether it is a server or runs to completion. */
export function spawnProcess(options: ProcessOptions): BenchProcess {
  const child = spawn(process.execPath, options.args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  // Only a tail is kept: the banner and warnings are noise unless the process fails to start, and the pipes must
  // be drained or a chatty child would block on a full pipe.
  let tail = "";
  const keep = (chunk: Buffer) => {
    tail = (tail + chunk.toString("utf8")).slice(-OUTPUT_TAIL_CHARS);
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  const exited = new Promise<void>((resolve) => {
    child.once("exit", () => resolve());
    // A failed spawn emits "error" and never "exit".
    child.once("error", (error) => {
      keep(Buffer.from(`spawn failed: ${error.message}\n`));
      resolve();
    });
  });
  return { name: options.name, child, exited, output: () => tail };
}

export function isRunning(server: BenchProcess): boolean {
  return server.child.pid !== undefined && server.child.exitCode === null && server.child.signalCode === null;
}

/** SIGTERM first so the server can shut down cleanly, SIGKILL if it has not exited within `graceMs`. */
export async function stopServer(server: BenchProcess, graceMs = 5000): Promise<void> {
  if (!isRunning(server)) return;
  server.child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), graceMs);
  });
  const killed = await Promise.race([server.exited.then(() => false), timedOut]);
  clearTimeout(timer);
  if (killed && isRunning(server)) {
    server.child.kill("SIGKILL");
    await server.exited;
  }
}

/**
 * Polls `path` until it answers 200. Fails early if the process exits, and after `timeoutMs` otherwise, with the
 * process's own output so that a configuration error is visible rather than a bare timeout.
 */
export async function waitUntilReady(server: ServerProcess, path: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastProblem = "no answer yet";
  while (Date.now() < deadline) {
    if (!isRunning(server)) {
      throw new Error(`${server.name} exited before it was ready:\n${server.output()}`);
    }
    try {
      const response = await httpRequest(server.baseUrl + path);
      if (response.status === 200) return;
      lastProblem = `HTTP ${response.status}`;
    } catch (error) {
      lastProblem = (error as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(
    `${server.name} was not ready after ${timeoutMs} ms (GET ${path}: ${lastProblem}):\n${server.output()}`,
  );
}

export interface HttpAnswer {
  readonly status: number;
  readonly body: Buffer;
}

export interface HttpRequestInit {
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** How long to wait for the answer (default 5 s): a slow search under test may need far longer. */
  readonly timeoutMs?: number;
}

/**
 * A one-off request on its own connection (no agent), so no keep-alive socket from a probe lingers in the load
 * generator's process or holds a server open at shutdown.
 */
export function httpRequest(url: string, init: HttpRequestInit = {}): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      { method: init.method ?? "GET", headers: init.headers, agent: false, timeout: init.timeoutMs ?? 5000 },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) }));
        response.on("error", reject);
      },
    );
    request.on("timeout", () => request.destroy(new Error("timed out")));
    request.on("error", reject);
    request.end(init.body);
  });
}

/**
 * Asks the OS for a free port. Another process could take it before the server binds; the server would then fail
 * to start, which `waitUntilReady` reports, so the race is tolerable for a benchmark.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => {
        if (address !== null && typeof address === "object") resolve(address.port);
        else reject(new Error("could not determine a free port"));
      });
    });
  });
}
