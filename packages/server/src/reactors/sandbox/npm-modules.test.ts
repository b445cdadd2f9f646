import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../../test/harness.js";
import { INSTALL_CACHE } from "./module-cache.js";
import { DEFAULT_MODULES } from "./modules.js";
import { workerLimits, type SandboxSettings } from "./setup.js";
import { ReactorLoadError, ReactorWorker, type Invocation, type WorkerLimits } from "./worker.js";

// The sandbox does not touch the store, so its tests run in one project only; the API's run on both.
const ONCE = process.env.TESSERA_TEST_STORE === "postgres";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Requires every default package, checks what each exports, and sends a request through axios and node-fetch. */
const USES_EVERY_PACKAGE = `
  const axios = require("axios");
  const fetch = require("node-fetch");
  const { v4, validate } = require("uuid");
  const outcome = (promise) => promise.then(
    (response) => "reached " + (response.status),
    (error) => ({ name: error.name, message: error.message, cause: error.cause && error.cause.name }),
  );
  module.exports = async ({ args }) => {
    const id = v4();
    return { raw: {
      uuid: id,
      valid: validate(id),
      axios: typeof axios.get === "function" && axios.default === axios && typeof axios.AxiosError,
      fetch: typeof fetch === "function" && typeof fetch.Headers,
      viaAxios: await outcome(axios.get(args.url, { timeout: 3000 })),
      viaFetch: await outcome(fetch(args.url, { timeout: 3000 })),
    } };
  };`;

function invocation(args: unknown): Invocation {
  return {
    args,
    configuration: {},
    svc: false,
    timeoutMs: 10_000,
    onRpc: () => Promise.reject(new Error("no svc in this test")),
  };
}

async function run(limits: WorkerLimits, code: string, modules: string[], args: unknown = {}) {
  const worker = await ReactorWorker.start(limits, code, modules);
  try {
    const outcome = await worker.invoke(invocation(args));
    if (outcome.kind !== "returned") throw new Error(`expected a result, got ${JSON.stringify(outcome)}`);
    return outcome.value.raw as Record<string, unknown>;
  } finally {
    worker.kill();
  }
}

/** A loopback HTTP server counting the requests that reach it. */
async function countingServer(): Promise<{ server: http.Server; url: string; hits: () => number }> {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.end("internal");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    server,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    hits: () => hits,
  };
}

describe.skipIf(ONCE)("npm packages in the reactor sandbox", () => {
  let dir: string;
  const settings = (overrides: Partial<SandboxSettings>): SandboxSettings => ({
    dir: path.join(dir, "reactors"),
    modules: DEFAULT_MODULES,
    egress: "",
    heapMiB: 64,
    rssMiB: 256,
    // About packages, not memory: no cgroup to leave behind (cgroup.test.ts covers it).
    cgroup: "off",
    frameBytes: 1024 * 1024,
    logBytes: 16 * 1024,
    loadTimeoutMs: 15_000,
    ...overrides,
  });
  const servers: http.Server[] = [];

  beforeAll(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "tessera-npm-"));
    // Workers run as nobody when the tests run as root: what they read must be reachable for them.
    chmodSync(dir, 0o755);
  });

  afterAll(async () => {
    for (const server of servers) await new Promise((resolve) => server.close(resolve));
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it("serves uuid, axios and node-fetch from the cache, and Deno's permissions hold for their requests", async () => {
    const internal = await countingServer();
    servers.push(internal.server);
    const result = await run(
      await workerLimits(settings({})),
      USES_EVERY_PACKAGE,
      ["axios", "node-fetch", "uuid"],
      {
        url: internal.url,
      },
    );
    expect(result.uuid).toMatch(UUID_V4);
    expect(result).toMatchObject({ valid: true, axios: "function", fetch: "function" });
    // Both packages go through Deno's Node compatibility layer, whose network permission refuses loopback.
    expect(result.viaAxios).toMatchObject({
      name: "NotCapable",
      message: /^Requires net access to "127.0.0.1:/,
    });
    expect(result.viaFetch).toMatchObject({ name: "FetchError", message: /reason: Requires net access to/ });
    expect(internal.hits()).toBe(0);
  });

  it("sends their requests where the network permission allows (a test-only loopback allowance)", async () => {
    const allowed = await countingServer();
    servers.push(allowed.server);
    const limits = await workerLimits(settings({}));
    const host = new URL(allowed.url).host;
    const result = await run(
      { ...limits, allowNet: host, denyNet: ["10.0.0.0/8"] },
      USES_EVERY_PACKAGE,
      ["axios", "node-fetch", "uuid"],
      { url: allowed.url },
    );
    expect(result).toMatchObject({ viaAxios: "reached 200", viaFetch: "reached 200" });
    expect(allowed.hits()).toBe(2);
  });

  it("refuses at load a package the server no longer offers, before Deno looks for it", async () => {
    const limits = await workerLimits(settings({ modules: [{ name: "uuid", version: "11.1.1" }] }));
    expect(Object.keys(limits.packages)).toEqual(["uuid"]);
    await expect(
      ReactorWorker.start(limits, `require("axios"); module.exports = async () => ({});`, ["axios"]),
    ).rejects.toThrow(new ReactorLoadError({ name: "Error", message: "'axios' is not an allowed module" }));
  });

  it("says so, at once, when the install cache is missing; reactors without packages still run", async () => {
    const empty = path.join(dir, "no-cache");
    mkdirSync(empty);
    const limits = await workerLimits(
      settings({ dir: path.join(dir, "reactors-without-cache"), moduleCache: empty }),
    );
    expect(limits.missingPackages).toEqual(["axios", "node-fetch", "uuid"]);
    const started = Date.now();
    await expect(
      ReactorWorker.start(limits, `const axios = require("axios"); module.exports = async () => ({});`, [
        "axios",
      ]),
    ).rejects.toThrow(
      new ReactorLoadError({
        name: "Error",
        message: "The module 'axios' is missing from this server's package cache",
      }),
    );
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(await run(limits, `module.exports = async () => ({ raw: "fine" });`, [])).toBe("fine");
  });

  it("reports a damaged cache as a load error without Deno's paths, not a hang", async () => {
    // A cache whose manifest lists axios but that lost one of axios's dependencies.
    const damaged = path.join(dir, "damaged-cache");
    cpSync(INSTALL_CACHE, damaged, { recursive: true });
    rmSync(path.join(damaged, "deno", "npm", "registry.npmjs.org", "follow-redirects"), { recursive: true });
    const limits = await workerLimits(
      settings({ dir: path.join(dir, "reactors-damaged"), moduleCache: damaged }),
    );
    const started = Date.now();
    await expect(
      ReactorWorker.start(limits, `const axios = require("axios"); module.exports = async () => ({});`, [
        "axios",
      ]),
    ).rejects.toThrow(
      new ReactorLoadError({
        name: "Error",
        message: "The module 'axios' could not be loaded from this server's package cache",
      }),
    );
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("copies the cache once per install, also for servers starting together, readable by the worker user", async () => {
    const shared = path.join(dir, "reactors-copied");
    const [first, second] = await Promise.all([
      workerLimits(settings({ dir: shared })),
      workerLimits(settings({ dir: shared })),
    ]);
    const again = await workerLimits(settings({ dir: shared }));
    expect(path.dirname(first.denoDir)).toBe(shared);
    expect([second.denoDir, again.denoDir]).toEqual([first.denoDir, first.denoDir]);
    // The copy that lost the race is gone: nothing half-copied is left behind.
    expect(readdirSync(shared).filter((f) => f.startsWith("."))).toEqual([]);
    const axios = path.join(first.denoDir, "npm", "registry.npmjs.org", "axios", "1.21.1", "index.js");
    expect(statSync(axios).mode & 0o777).toBe(0o644);
  });
});

describe.skipIf(STORE_UNAVAILABLE)("npm packages through the API", () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  it("saves and runs a reactor using uuid, and refuses a package outside the list with a 400", async () => {
    const created = await server.request("POST", "/reactors", {
      body: {
        configuration: {},
        name: "ids",
        code: `const { v4 } = require("uuid");\nmodule.exports = async () => ({ raw: { id: v4() } });`,
      },
    });
    expect(created.status, created.text).toBe(201);
    const caller = await server.request("POST", "/applications", {
      body: { name: "caller", type: "private", permissions: ["token:use"] },
    });
    expect(caller.status, caller.text).toBe(201);
    const reacted = await server.request("POST", `/reactors/${created.body.id}/react`, {
      key: caller.body.key,
      body: { args: {} },
    });
    expect(reacted.status, reacted.text).toBe(200);
    expect(reacted.body.raw.id).toMatch(UUID_V4);

    const refused = await server.request("POST", "/reactors", {
      body: {
        configuration: {},
        name: "lodash",
        code: `const _ = require("lodash");\nmodule.exports = async () => ({});`,
      },
    });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      status: 400,
      errors: { code: ["'lodash' is not an allowed module (line 1, column 11)"] },
    });
  });
});
