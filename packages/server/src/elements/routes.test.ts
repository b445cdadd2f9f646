import http from "node:http";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectProblem, startTestServer, STORE_UNAVAILABLE, type TestServer } from "../../test/harness.js";
import { elementsDistDir, loadElementAssets } from "./assets.js";
import { acceptsGzip } from "./routes.js";

/** A raw request: fetch would ask for gzip and decode it, and normalise `..` in the path, on its own. */
function get(server: TestServer, path: string, headers: Record<string, string> = {}, method = "GET") {
  return new Promise<{ status: number; headers: Headers; body: Buffer }>((resolve, reject) => {
    const request = http.request(server.url + path, { method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on("data", (chunk: Buffer) => chunks.push(chunk));
      response.on("error", reject);
      response.on("end", () => {
        const received = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          if (typeof value === "string") received.set(name, value);
        }
        resolve({ status: response.statusCode!, headers: received, body: Buffer.concat(chunks) });
      });
    });
    request.on("error", reject);
    request.end();
  });
}

const MERCHANTS = "https://shop.example.com, http://127.0.0.1:8080";

describe.skipIf(STORE_UNAVAILABLE)("/elements/ from a vault with merchant origins", () => {
  let server: TestServer;
  let frameHtml: string;
  beforeAll(async () => {
    server = await startTestServer({ TESSERA_ELEMENTS_ORIGINS: MERCHANTS });
    frameHtml = (await get(server, "/elements/v1/frame.html")).body.toString("utf8");
  });
  afterAll(() => server?.close());

  const assetsOf = (html: string) => [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!);

  it("serves the field document with a strict policy whose frame-ancestors are the configured origins", async () => {
    const response = await get(server, "/elements/v1/frame.html");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    expect(response.headers.get("cache-control")).toBe("no-cache");
    expect(response.headers.get("content-security-policy")).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; base-uri 'none'; " +
        "form-action 'none'; require-trusted-types-for 'script'; trusted-types 'none'; " +
        "frame-ancestors 'self' https://shop.example.com http://127.0.0.1:8080",
    );
  });

  it("has no inline script or style in the field document, only files of its own", () => {
    expect(frameHtml).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    expect(frameHtml).not.toMatch(/<style|\sstyle=|\son[a-z]+=|javascript:/i);
    const assets = assetsOf(frameHtml);
    expect(assets).toHaveLength(2);
    for (const asset of assets) expect(asset).toMatch(/^frame-[A-Z0-9]+\.(js|css)$/);
  });

  it("serves the frame's script and style as immutable files, of their own types, to the vault's origin only", async () => {
    for (const asset of assetsOf(frameHtml)) {
      const response = await get(server, `/elements/v1/${asset}`);
      expect(response.status, asset).toBe(200);
      expect(response.headers.get("content-type")).toBe(
        asset.endsWith(".js") ? "text/javascript; charset=utf-8" : "text/css; charset=utf-8",
      );
      expect(response.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(response.headers.get("cross-origin-resource-policy")).toBe("same-origin");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    }
  });

  it("serves the library to any page, for a short while, usable with SRI", async () => {
    const response = await get(server, "/elements/v1/elements.js");
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(response.headers.get("cache-control")).toBe("public, max-age=300");
    expect(response.headers.get("access-control-allow-origin")).toBe("*");
    expect(response.headers.get("cross-origin-resource-policy")).toBe("cross-origin");
    expect(response.body.toString("utf8")).toContain("TesseraElements");
  });

  it("sends gzip when asked, the same bytes otherwise", async () => {
    const plain = await get(server, "/elements/v1/elements.js");
    const zipped = await get(server, "/elements/v1/elements.js", { "accept-encoding": "gzip" });
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(zipped.headers.get("content-encoding")).toBe("gzip");
    expect(zipped.headers.get("vary")).toBe("Accept-Encoding");
    expect(zipped.body.length).toBeLessThan(plain.body.length);
    expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
    const refused = await get(server, "/elements/v1/elements.js", { "accept-encoding": "gzip;q=0, br" });
    expect(refused.headers.get("content-encoding")).toBeNull();
  });

  it("answers a matching If-None-Match with 304 and no body, and HEAD with headers only", async () => {
    const first = await get(server, "/elements/v1/frame.html");
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(/^W\/"[\w.-]+"$/);
    const again = await get(server, "/elements/v1/frame.html", { "if-none-match": etag });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    expect(again.headers.get("content-security-policy")).toBe(first.headers.get("content-security-policy"));
    const head = await get(server, "/elements/v1/frame.html", {}, "HEAD");
    expect(head.status).toBe(200);
    expect(head.headers.get("content-security-policy")).toBe(first.headers.get("content-security-policy"));
    expect(head.body.length).toBe(0);
  });

  it("needs no key, and answers unknown files and escapes with a 404 problem", async () => {
    expect((await get(server, "/elements/v1/frame.html")).status).toBe(200);
    for (const path of [
      "/elements/v1/nothing.js",
      "/elements/v1/%2e%2e/manifest.json",
      "/elements/v1/..%2f..%2fpackage.json",
      "/elements/manifest.json",
      "/elements/elements.mjs",
    ]) {
      const response = await server.request("GET", path, { key: null });
      expectProblem(response, 404, { code: "not-found" });
    }
  });

  it("serves the demo in development, never inside a frame", async () => {
    const page = await get(server, "/elements/demo");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("content-security-policy")).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; frame-src 'self'; base-uri 'none'; " +
        "form-action 'none'; frame-ancestors 'none'",
    );
    const html = page.body.toString("utf8");
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    for (const asset of assetsOf(html)) {
      const response = await get(server, new URL(asset, `${server.url}/elements/demo`).pathname);
      expect(response.status, asset).toBe(200);
    }
  });

  it("keeps the files out of the OpenAPI document", async () => {
    const document = await server.request("GET", "/openapi.json", { key: null });
    expect(Object.keys(document.body.paths).filter((path) => path.startsWith("/elements"))).toEqual([]);
  });
});

describe.skipIf(STORE_UNAVAILABLE)("/elements/ with no merchant origins and the demo off", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ TESSERA_ELEMENTS_DEMO: "false" });
  });
  afterAll(() => server?.close());

  it("lets no page embed the fields", async () => {
    const response = await get(server, "/elements/v1/frame.html");
    expect(response.headers.get("content-security-policy")).toMatch(/; frame-ancestors 'none'$/);
  });

  it("does not serve the demo or its files", async () => {
    const built = await loadElementAssets(elementsDistDir());
    const demoFiles = built!.files.filter((file) => file.role.startsWith("demo")).map((file) => file.url);
    expect(demoFiles).toHaveLength(3);
    for (const url of demoFiles) {
      expectProblem(await server.request("GET", url, { key: null }), 404, { code: "not-found" });
    }
  });
});

describe("acceptsGzip", () => {
  it.each([
    ["gzip", true],
    ["gzip, deflate, br", true],
    ["br;q=1.0, gzip;q=0.8", true],
    ["x-gzip", true],
    ["GZIP", true],
    ["gzip;q=0", false],
    ["gzip;q=0.000", false],
    ["deflate, br", false],
    ["*", false],
    ["", false],
  ])("%j → %s", (header, expected) => {
    expect(acceptsGzip(header)).toBe(expected);
  });
});
