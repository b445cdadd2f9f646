import { randomBytes } from "node:crypto";
import { statSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  createTestDatabase,
  send,
  type TestDatabase,
} from "../../server/test/harness.js";
import { freePort } from "../../server/test/postgres-cluster.js";
import { killAll, tessera, waitFor } from "./run-cli.js";

describe.skipIf(STORE_UNAVAILABLE)(`the tessera command (${STORE})`, () => {
  let database: TestDatabase;
  let port: number;
  let env: Record<string, string>;
  const masterKey = randomBytes(32).toString("base64");

  beforeEach(async () => {
    database = await createTestDatabase();
    port = await freePort();
    // The embedded store gets no master key, as on a laptop: the dev key file is part of what is tested.
    env = {
      ...database.env,
      TESSERA_PORT: String(port),
      ...(STORE === "postgres" && { TESSERA_MASTER_KEY: masterKey }),
    };
  });

  afterEach(async () => {
    killAll();
    await database.drop();
  });

  it("serves, prints the generated management key once, and keeps it across restarts", async () => {
    const first = tessera(["serve"], env, database.dataDir);
    const [, key] = await waitFor(first, /SVC-API-KEY: (key_mgt_[A-Za-z0-9_-]+)/);
    await waitFor(first, /listening on http:\/\/127\.0\.0\.1:\d+/);
    const url = `http://127.0.0.1:${port}`;
    const list = await send(url, key!, "GET", "/applications");
    expect(list.status).toBe(200);
    expect(list.body.pagination.total_items).toBe(1);
    if (STORE === "sqlite") {
      expect(statSync(path.join(database.dataDir, "master.key")).mode & 0o777).toBe(0o600);
      expect(statSync(path.join(database.dataDir, "tessera.db")).isFile()).toBe(true);
    }
    first.child.kill("SIGTERM");
    expect(await first.exited).toBe(0);

    const second = tessera(["serve"], env, database.dataDir);
    await waitFor(second, /listening on .*regenerate-bootstrap-key/s);
    expect(second.stderr).not.toMatch(/SVC-API-KEY: key_/);
    expect((await send(url, key!, "GET", "/applications/key")).status).toBe(200);
    second.child.kill("SIGINT");
    expect(await second.exited).toBe(0);
  });

  it("uses TESSERA_BOOTSTRAP_KEY, and init --regenerate-bootstrap-key replaces it", async () => {
    const bootstrapKey = `bootstrap-${randomBytes(16).toString("hex")}`;
    const init = tessera(["init"], { ...env, TESSERA_BOOTSTRAP_KEY: bootstrapKey }, database.dataDir);
    expect(await init.exited).toBe(0);
    expect(init.stderr).toMatch(/TESSERA_BOOTSTRAP_KEY/);
    expect(init.stderr).not.toContain(bootstrapKey);

    const regenerate = tessera(["init", "--regenerate-bootstrap-key"], env, database.dataDir);
    expect(await regenerate.exited).toBe(0);
    const [, newKey] = regenerate.stderr.match(/SVC-API-KEY: (key_mgt_[A-Za-z0-9_-]+)/) ?? [];
    expect(newKey).toBeDefined();

    const server = tessera(["serve"], env, database.dataDir);
    await waitFor(server, /listening on/);
    const url = `http://127.0.0.1:${port}`;
    expect((await send(url, bootstrapKey, "GET", "/applications/key")).status).toBe(401);
    const self = await send(url, newKey!, "GET", "/applications/key");
    expect(self.status).toBe(200);

    // Locked out by its own hand: the bootstrap Application deletes itself; recovery recreates it.
    expect((await send(url, newKey!, "DELETE", `/applications/${self.body.id}`)).status).toBe(204);
    const recover = tessera(["init", "--regenerate-bootstrap-key"], env, database.dataDir);
    expect(await recover.exited, recover.stderr).toBe(0);
    const [, recoveredKey] = recover.stderr.match(/SVC-API-KEY: (key_mgt_[A-Za-z0-9_-]+)/) ?? [];
    const recovered = await send(url, recoveredKey!, "GET", "/applications/key");
    expect(recovered.status).toBe(200);
    expect(recovered.body.permissions).toContain("tenant:create");
    expect(recovered.body.tenant_id).toBe(self.body.tenant_id);
  });

  it("refuses to regenerate the bootstrap key of a store that was never initialized", async () => {
    const run = tessera(["init", "--regenerate-bootstrap-key"], env, database.dataDir);
    expect(await run.exited).toBe(1);
    expect(run.stderr).toContain("the store has no bootstrap tenant yet");
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it("finishes an in-flight request on SIGTERM, turns a later one away with a 503 problem, then exits 0", async () => {
    const bootstrapKey = `bootstrap-${randomBytes(16).toString("hex")}`;
    const server = tessera(["serve"], { ...env, TESSERA_BOOTSTRAP_KEY: bootstrapKey }, database.dataDir);
    await waitFor(server, /listening on/);

    const body = JSON.stringify({ name: "in flight", type: "private", permissions: ["token:use"] });
    const socket = net.connect(port, "127.0.0.1");
    await new Promise((r) => socket.once("connect", r));
    let response = "";
    socket.on("data", (chunk: Buffer) => (response += chunk.toString()));
    const closed = new Promise((r) => socket.once("close", r));
    socket.write(
      `POST /applications HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${bootstrapKey}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n` +
        body.slice(0, 10),
    );
    await new Promise((r) => setTimeout(r, 300));
    server.child.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 300));
    expect(server.child.exitCode).toBeNull();
    // write, not end: a client that half-closes early is aborted by Node before its answer is ready. A second
    // request pipelined on the same kept-alive connection arrives while the server drains.
    socket.write(
      body.slice(10) + `GET /applications/key HTTP/1.1\r\nHost: x\r\nSVC-API-KEY: ${bootstrapKey}\r\n\r\n`,
    );
    await closed;
    const [first, second] = response.split(/(?=HTTP\/1\.1 )/);
    expect(first, server.stderr + server.stdout).toMatch(/^HTTP\/1\.1 201/);
    expect(first).toContain('"name":"in flight"');
    expect(second).toMatch(/^HTTP\/1\.1 503/);
    expect(second).toMatch(/content-type: application\/problem\+json/i);
    expect(second).toMatch(/connection: close/i);
    expect(second).toContain('"type":"urn:tessera:problem:unavailable"');
    expect(await server.exited).toBe(0);
  });

  it("refuses to start against the store with a different master key", async () => {
    if (STORE === "sqlite") {
      const init = tessera(["init"], env, database.dataDir);
      expect(await init.exited).toBe(0);
    } else {
      expect(await tessera(["init"], env, database.dataDir).exited).toBe(0);
    }
    const wrong = tessera(
      ["serve"],
      { ...env, TESSERA_MASTER_KEY: randomBytes(32).toString("base64") },
      database.dataDir,
    );
    expect(await wrong.exited).toBe(84);
    expect(wrong.stderr).toMatch(/master key cannot unwrap this store's keys/);
    expect(wrong.stderr).not.toMatch(/\n\s+at /);
  });
});

describe("the tessera command's usage and configuration errors", () => {
  const cwd = process.cwd();

  it("lists every configuration problem at once and exits 78", async () => {
    const run = tessera(
      ["serve"],
      { NODE_ENV: "production", TESSERA_PORT: "x", TESSERA_BOOTSTRAP_KEY: "short" },
      cwd,
    );
    expect(await run.exited).toBe(78);
    expect(run.stderr).toContain("TESSERA_PORT must be an integer");
    expect(run.stderr).toContain("TESSERA_BOOTSTRAP_KEY must be at least 32 characters");
    expect(run.stderr).toContain("NODE_ENV=production requires TESSERA_MASTER_KEY");
    // One problem a line, not escaped into one long line.
    expect(run.stderr).toMatch(/^ {2}- TESSERA_PORT must be an integer/m);
    expect(run.stderr).not.toContain("\\u000a");
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });

  it("prints help, and rejects unknown commands and flags with exit 2", async () => {
    const help = tessera(["--help"], {}, cwd);
    expect(await help.exited).toBe(0);
    expect(help.stdout).toMatch(/serve[\s\S]*init[\s\S]*migrate/);
    const unknown = tessera(["launch"], {}, cwd);
    expect(await unknown.exited).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'launch'");
    const flag = tessera(["serve", "--fast"], {}, cwd);
    expect(await flag.exited).toBe(2);
    expect(flag.stderr).toBe("tessera: unknown option '--fast' (run 'tessera serve --help' for usage)\n");
  });
});
