import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../test/harness.js";

const SHOP = "http://127.0.0.1:4100";
const EVIL = "http://127.0.0.1:4666";

/** Raw fetch: the harness's helper adds a key, and a preflight carries none. */
const preflight = (server: TestServer, path: string, origin: string, method = "POST") =>
  fetch(server.url + path, {
    method: "OPTIONS",
    headers: {
      origin,
      "access-control-request-method": method,
      "access-control-request-headers": "content-type,svc-api-key",
    },
  });

describe.skipIf(STORE_UNAVAILABLE)("CORS", () => {
  let server: TestServer;
  let off: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ TESSERA_CORS_ORIGINS: SHOP, TESSERA_CORS_MAX_AGE_SECONDS: "300" });
    off = await startTestServer();
  });
  afterAll(async () => {
    await server?.close();
    await off?.close();
  });

  it.each([
    ["/tokens", "POST"],
    ["/tokens/", "POST"],
    ["/tokenize", "POST"],
    ["/sessions", "POST"],
    ["/tokens/search", "POST"],
    ["/tokens/0190-abc", "GET"],
  ])("answers a preflight of %s %s from an allowed origin", async (path, method) => {
    const response = await preflight(server, path, SHOP, method);
    expect(response.status).toBe(204);
    expect(response.headers.get("access-control-allow-origin")).toBe(SHOP);
    expect(response.headers.get("access-control-allow-methods")).toBe("GET, POST");
    expect(response.headers.get("access-control-allow-headers")).toMatch(
      /Content-Type, SVC-API-KEY, BT-API-KEY/,
    );
    expect(response.headers.get("access-control-max-age")).toBe("300");
    expect(response.headers.get("access-control-allow-credentials")).toBeNull();
    expect(response.headers.get("vary")).toMatch(/Origin/);
  });

  it.each([
    ["/applications", "POST", SHOP],
    ["/applications/key", "GET", SHOP],
    ["/sessions/authorize", "POST", SHOP],
    ["/detokenize", "POST", SHOP],
    ["/tokens/x", "DELETE", SHOP],
    ["/tokens", "POST", EVIL],
    ["/tokens", "POST", "null"],
  ])("gives %s %s from %s no CORS header: a 404 preflight", async (path, method, origin) => {
    const response = await preflight(server, path, origin, method);
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    expect(response.headers.get("access-control-allow-methods")).toBeNull();
  });

  it("marks the answers of browser routes for an allowed origin, refusals included, and no other", async () => {
    const refused = await fetch(`${server.url}/tokens/abc`, { headers: { origin: SHOP } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("access-control-allow-origin")).toBe(SHOP);
    const management = await fetch(`${server.url}/applications`, {
      headers: { origin: SHOP, "svc-api-key": server.bootstrapKey },
    });
    expect(management.status).toBe(200);
    expect(management.headers.get("access-control-allow-origin")).toBeNull();
    const evil = await fetch(`${server.url}/tokens/abc`, { headers: { origin: EVIL } });
    expect(evil.headers.get("access-control-allow-origin")).toBeNull();
  });

  it("is off by default", async () => {
    const response = await preflight(off, "/tokens", SHOP);
    expect(response.status).toBe(404);
    expect(response.headers.get("access-control-allow-origin")).toBeNull();
    const get = await fetch(`${off.url}/tokens/abc`, { headers: { origin: SHOP } });
    expect(get.headers.get("access-control-allow-origin")).toBeNull();
  });
});
