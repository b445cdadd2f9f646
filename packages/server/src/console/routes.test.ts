import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import Fastify, { type FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, expectProblem, startTestServer, type TestServer } from "../../test/harness.js";
import { registerErrorHandling } from "../server/error-handler.js";
import { builtConsoleRoot, CONSOLE_CSP, registerConsole } from "./routes.js";

const INDEX = '<!doctype html><script type="module" src="/console/assets/app-1.js"></script>';

function expectConsoleHeaders(headers: Record<string, unknown>) {
  expect(headers["content-security-policy"]).toBe(CONSOLE_CSP);
  expect(headers["x-content-type-options"]).toBe("nosniff");
  expect(headers["x-frame-options"]).toBe("DENY");
  expect(headers["referrer-policy"]).toBe("no-referrer");
  expect(headers["cross-origin-opener-policy"]).toBe("same-origin");
}

describe("the console's files", () => {
  let dir: string;
  let app: FastifyInstance;
  let unbuilt: FastifyInstance;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "tessera-console-"));
    const root = path.join(dir, "dist");
    mkdirSync(path.join(root, "assets"), { recursive: true });
    writeFileSync(path.join(root, "index.html"), INDEX);
    writeFileSync(path.join(root, "assets", "app-1.js"), "export {};");
    writeFileSync(path.join(root, "favicon.svg"), "<svg/>");
    writeFileSync(path.join(dir, "secret.txt"), "outside the root");
    app = Fastify();
    registerErrorHandling(app);
    await registerConsole(app, root);
    unbuilt = Fastify();
    registerErrorHandling(unbuilt);
    await registerConsole(unbuilt, path.join(dir, "nothing-here"));
  });
  afterAll(async () => {
    await app?.close();
    await unbuilt?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers every page path with index.html under a strict CSP, and never caches it", async () => {
    for (const url of ["/console", "/console/", "/console/applications", "/console/tokens/0192-abc/x"]) {
      const response = await app.inject({ method: "GET", url });
      expect(response.statusCode, url).toBe(200);
      expect(response.headers["content-type"]).toMatch(/^text\/html/);
      expect(response.headers["cache-control"]).toBe("no-cache");
      expect(response.body).toBe(INDEX);
      expectConsoleHeaders(response.headers);
    }
  });

  it("serves built assets as immutable, and other files for an hour", async () => {
    const asset = await app.inject({ method: "GET", url: "/console/assets/app-1.js" });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers["content-type"]).toMatch(/javascript/);
    expect(asset.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expectConsoleHeaders(asset.headers);
    const icon = await app.inject({ method: "GET", url: "/console/favicon.svg" });
    expect(icon.statusCode).toBe(200);
    expect(icon.headers["cache-control"]).toBe("public, max-age=3600");
  });

  it("answers a missing file, and any way out of the root, with a 404 problem", async () => {
    for (const url of [
      "/console/assets/missing.js",
      "/console/missing.png",
      "/console/..%2fsecret.txt",
      "/console/assets/..%2f..%2fsecret.txt",
      "/console/%2e%2e/secret.txt",
    ]) {
      const response = await app.inject({ method: "GET", url });
      expect([403, 404], url).toContain(response.statusCode);
      expect(response.headers["content-type"], url).toMatch(/^application\/problem\+json/);
      expect(response.body).not.toContain("outside the root");
    }
  });

  it("answers 503 with what to do when the console is not built", async () => {
    const response = await unbuilt.inject({ method: "GET", url: "/console/applications" });
    expect(response.statusCode).toBe(503);
    expect(response.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(response.json()).toMatchObject({
      status: 503,
      detail: expect.stringContaining("npm run build --workspace @tessera/console"),
    });
    expectConsoleHeaders(response.headers);
  });
});

describe.skipIf(STORE_UNAVAILABLE)("the console on a real server", () => {
  let server: TestServer;
  let off: TestServer;
  beforeAll(async () => {
    [server, off] = await Promise.all([
      startTestServer(),
      startTestServer({ TESSERA_CONSOLE_ENABLED: "false" }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([server?.close(), off?.close()]);
  });

  it("serves the built console (npm install builds it), with no inline script and nothing from elsewhere", async () => {
    const root = builtConsoleRoot();
    expect(root).toBeDefined();
    const response = await server.request("GET", "/console/applications", { key: null });
    expect(response.status).toBe(200);
    expect(response.text).toBe(readFileSync(path.join(root!, "index.html"), "utf8"));
    expectConsoleHeaders(Object.fromEntries(response.headers));
    // Every script has a src on this origin; no inline code, no other host.
    const scripts = [...response.text.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts.length).toBeGreaterThan(0);
    for (const [, attributes, body] of scripts) {
      expect(attributes).toMatch(/\bsrc="\/console\/assets\/[^"]+\.js"/);
      expect(body).toBe("");
    }
    expect(response.text).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
    expect(response.text).not.toMatch(/\sstyle=/);
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(response.text)![1]!;
    expect((await server.request("GET", asset, { key: null })).status).toBe(200);
  });

  it("is a 404 everywhere when TESSERA_CONSOLE_ENABLED=false, and the API is untouched", async () => {
    for (const url of ["/console", "/console/applications", "/console/assets/x.js"]) {
      expectProblem(await off.request("GET", url, { key: null }), 404);
    }
    expect((await off.request("GET", "/applications/key", { key: off.bootstrapKey })).status).toBe(200);
  });
});
