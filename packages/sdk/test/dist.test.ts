import { execFile } from "node:child_process";
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE, startTestServer, type TestServer } from "../../server/test/harness.js";

const run = promisify(execFile);
const sdkDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");

// The Standard Webhooks reference message (see webhooks.test.ts).
const VECTOR = {
  payload: '{"test": 2432232314}',
  headers: {
    "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
    "webhook-timestamp": "1614265330",
    "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
  },
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
};

/** Uses the package as an application would: by its name, compiled, under plain node (no tsx, no vitest). */
const CONSUMER = `
import * as sdk from "@tessera/sdk";
const { TesseraClient, TesseraError, TesseraNotFoundError, verifyWebhook } = sdk;
const { URL: baseUrl, KEY: apiKey } = process.env;
const vector = ${JSON.stringify(VECTOR)};
const out = { exports: Object.keys(sdk).sort() };

const admin = new TesseraClient({ baseUrl, apiKey });
out.tenant = (await admin.tenants.getSelf()).name;
const app = await admin.applications.create({
  name: "dist",
  type: "private",
  rules: [{ priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read", "token:search"] }],
});
const client = new TesseraClient({ baseUrl, apiKey: app.key });
const token = await client.tokens.create({ data: { snake_key: 1 }, metadata: { orderRef: "A" } });
out.token = { tenantId: token.tenantId, data: token.data, metadata: token.metadata, createdBy: token.createdBy === app.id };
const { fullName } = await client.tokenize({ fullName: "Jane Doe" });
out.detokenized = await client.detokenize({ name: "{{ " + fullName + " }}" });
let searched = 0;
for await (const found of client.tokens.searchAll({ size: 1 })) searched += found.id ? 1 : 0;
out.searched = searched;
try {
  await client.tokens.get("missing-token");
} catch (error) {
  out.notFound = [error instanceof TesseraNotFoundError, error instanceof TesseraError, error.name, error.status];
}
out.webhook = await verifyWebhook(vector.payload, vector.headers, vector.secret, { toleranceSeconds: Infinity });
process.stdout.write(JSON.stringify(out));
`;

/**
 * Node 16 as far as the SDK can tell: no global fetch and no global Web Crypto (both deleted before the import).
 * The client then needs the fetch option, here a few lines over node:http; verifyWebhook falls back to
 * node:crypto's webcrypto.
 */
const NODE16_CONSUMER = `
import http from "node:http";
delete globalThis.fetch;
delete globalThis.crypto;
const { TesseraClient, verifyWebhook } = await import("@tessera/sdk");
const { URL: baseUrl, KEY: apiKey } = process.env;
const vector = ${JSON.stringify(VECTOR)};
const out = { globals: [typeof globalThis.fetch, typeof globalThis.crypto] };

try {
  new TesseraClient({ baseUrl, apiKey });
} catch (error) {
  out.withoutFetch = error.message;
}
const fetch = (url, init) =>
  new Promise((resolve, reject) => {
    const request = http.request(url, { method: init.method, headers: init.headers }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => (text += chunk));
      response.on("end", () =>
        resolve({
          status: response.statusCode,
          headers: { get: (name) => response.headers[name.toLowerCase()] ?? null },
          text: async () => text,
        }),
      );
    });
    request.on("error", reject);
    request.end(init.body);
  });
out.tenant = (await new TesseraClient({ baseUrl, apiKey, fetch }).tenants.getSelf()).name;
out.webhook = await verifyWebhook(vector.payload, vector.headers, vector.secret, { toleranceSeconds: Infinity });
process.stdout.write(JSON.stringify(out));
`;

/**
 * The reactor runtime's view: Deno, allowed to reach the server's address and nothing else (no env, no files).
 * The compiled modules are loaded by path, as the runtime will load them.
 */
const DENO_CONSUMER = `
import { TesseraClient, TesseraForbiddenError, verifyWebhook } from "./node_modules/@tessera/sdk/dist/index.js";
const [baseUrl, apiKey] = Deno.args;
const vector = ${JSON.stringify(VECTOR)};
const out = {};
const client = new TesseraClient({ baseUrl, apiKey });
out.tenant = (await client.tenants.getSelf()).name;
try {
  await client.tokens.create({ data: "x" });
} catch (error) {
  out.forbidden = [error instanceof TesseraForbiddenError, error.status];
}
out.webhook = await verifyWebhook(vector.payload, new Headers(vector.headers), vector.secret, { toleranceSeconds: Infinity });
console.log(JSON.stringify(out));
`;

// Packaging does not depend on the store: built and run once, in the SQLite project.
describe.skipIf(STORE !== "sqlite")("the built package", () => {
  let dir: string;
  let distDir: string;
  let server: TestServer | undefined;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "tessera-sdk-dist-"));
    const packageDir = path.join(dir, "node_modules", "@tessera", "sdk");
    distDir = path.join(packageDir, "dist");
    mkdirSync(packageDir, { recursive: true });
    copyFileSync(path.join(sdkDir, "package.json"), path.join(packageDir, "package.json"));
    // The build of the sources under test, not whatever dist/ the last `npm install` left; its build info stays
    // here too, or the next `npm run build` would take the package's own dist/ for up to date.
    await run(process.execPath, [
      tsc,
      "-p",
      path.join(sdkDir, "tsconfig.build.json"),
      "--outDir",
      distDir,
      "--tsBuildInfoFile",
      path.join(distDir, ".tsbuildinfo"),
    ]);
    writeFileSync(path.join(dir, "consumer.mjs"), CONSUMER);
    writeFileSync(path.join(dir, "node16-consumer.mjs"), NODE16_CONSUMER);
    writeFileSync(path.join(dir, "deno-consumer.mjs"), DENO_CONSUMER);
    server = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function runConsumer(file: string): Promise<any> {
    const { stdout } = await run(process.execPath, [path.join(dir, file)], {
      cwd: dir,
      env: { PATH: process.env.PATH, URL: server!.url, KEY: server!.bootstrapKey },
    });
    return JSON.parse(stdout);
  }

  it("imports nothing but its own modules: no runtime dependencies", () => {
    const files = readdirSync(distDir, { recursive: true, encoding: "utf8" }).filter((file) =>
      file.endsWith(".js"),
    );
    expect(files).toContain("index.js");
    for (const file of files) {
      const source = readFileSync(path.join(distDir, file), "utf8");
      const specifiers = [...source.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*["']([^"']+)["']/g)].map(
        (m) => m[1],
      );
      for (const specifier of specifiers) expect(specifier, file).toMatch(/^\.\.?\//);
    }
    for (const file of ["index.d.ts", "client.d.ts", "types.d.ts", "generated/openapi.d.ts"]) {
      expect(files.map((js) => js.replace(/\.js$/, ".d.ts"))).toContain(file);
    }
  });

  it("works by its package name under plain node against the real server", async () => {
    const out = await runConsumer("consumer.mjs");
    expect(out).toEqual({
      exports: [
        "Access",
        "Applications",
        "Logs",
        "Reactors",
        "SDK_VERSION",
        "Sessions",
        "Tenants",
        "TesseraAuthenticationError",
        "TesseraClient",
        "TesseraConflictError",
        "TesseraConnectionError",
        "TesseraError",
        "TesseraForbiddenError",
        "TesseraNotFoundError",
        "TesseraRateLimitError",
        "TesseraServerError",
        "TesseraValidationError",
        "Tokens",
        "WebhookVerificationError",
        "Webhooks",
        "verifyWebhook",
      ],
      tenant: "default",
      token: {
        tenantId: expect.any(String),
        data: { snake_key: 1 },
        metadata: { orderRef: "A" },
        createdBy: true,
      },
      detokenized: { name: "Jane Doe" },
      searched: 2,
      notFound: [true, true, "TesseraNotFoundError", 404],
      webhook: { test: 2432232314 },
    });
  });

  it("works in Deno with network access to the server only", async () => {
    const deno = createRequire(import.meta.url).resolve("deno/bin.cjs");
    const { port } = new URL(server!.url);
    const { stdout } = await run(
      process.execPath,
      [
        deno,
        "run",
        "--no-prompt",
        "--no-config",
        `--allow-net=127.0.0.1:${port}`,
        "deno-consumer.mjs",
        server!.url,
        server!.bootstrapKey,
      ],
      { cwd: dir, env: { PATH: process.env.PATH, DENO_DIR: path.join(dir, "deno-cache"), NO_COLOR: "1" } },
    );
    expect(JSON.parse(stdout)).toEqual({
      tenant: "default",
      forbidden: [true, 403],
      webhook: { test: 2432232314 },
    });
  });

  it("works without global fetch and Web Crypto, as on Node 16, given a fetch", async () => {
    const out = await runConsumer("node16-consumer.mjs");
    expect(out).toEqual({
      globals: ["undefined", "undefined"],
      withoutFetch: "no global fetch (Node 18 or later has one): pass options.fetch",
      tenant: "default",
      webhook: { test: 2432232314 },
    });
  });
});
