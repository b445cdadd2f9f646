import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { STORE, STORE_UNAVAILABLE, startTestServer, type TestServer } from "../../server/test/harness.js";
import { killAll, run } from "./run-cli.js";

describe.skipIf(STORE_UNAVAILABLE)(`tessera sessions authorize (${STORE})`, () => {
  let server: TestServer;
  let dir: string;
  let publicKey: string;
  let privateKey: string;
  let token: string;

  const cli = (args: string[], key = privateKey) =>
    run(args, { TESSERA_URL: server.url, SVC_API_KEY: key }, dir);

  beforeAll(async () => {
    server = await startTestServer();
    dir = mkdtempSync(path.join(tmpdir(), "tessera-cli-sessions-"));
    const app = async (body: unknown) => {
      const response = await server.request("POST", "/applications", { body });
      expect(response.status, response.text).toBe(201);
      return response.body.key as string;
    };
    publicKey = await app({ name: "page", type: "public", permissions: ["token:create"] });
    privateKey = await app({
      name: "backend",
      type: "private",
      rules: [
        { priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read"] },
      ],
    });
    const created = await server.request("POST", "/tokens", {
      key: privateKey,
      body: { type: "token", data: "shown to the session" },
    });
    token = created.body.id as string;
  });
  afterEach(killAll);
  afterAll(async () => {
    killAll();
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  });

  const newSession = async () => {
    const response = await server.request("POST", "/sessions", { key: publicKey });
    expect(response.status, response.text).toBe(201);
    return response.body as { session_key: string; nonce: string };
  };

  it("authorizes with condition rules from a file; the session key then reads that token, once only", async () => {
    const session = await newSession();
    const rules = path.join(dir, "rules.json");
    writeFileSync(
      rules,
      JSON.stringify([
        {
          priority: 1,
          conditions: [{ attribute: "id", operator: "equals", value: token }],
          transform: "reveal",
          permissions: ["token:read"],
        },
      ]),
    );
    const done = await cli(["sessions", "authorize", "--nonce", session.nonce, "--rule-file", rules]);
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toBe("");
    expect(done.stderr).toBe("Session authorized.\n");
    const read = await server.request("GET", `/tokens/${token}`, { key: session.session_key });
    expect(read.body.data).toBe("shown to the session");

    const again = await cli([
      "sessions",
      "authorize",
      "--nonce",
      session.nonce,
      "--permission",
      "token:read",
    ]);
    expect(again.code).toBe(4);
    expect(again.stdout).toBe("");
    expect(again.stderr).toMatch(/^tessera: .*nonce.*\n$/);
  });

  it("prints JSON with --json, and refuses a missing nonce as a usage error", async () => {
    const session = await newSession();
    const done = await cli([
      "sessions",
      "authorize",
      "--nonce",
      session.nonce,
      "--permission",
      "token:read",
      "--json",
    ]);
    expect(done.code, done.stderr).toBe(0);
    expect(JSON.parse(done.stdout)).toEqual({ authorized: true });
    const missing = await cli(["sessions", "authorize", "--permission", "token:read"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--nonce/);
  });
});
