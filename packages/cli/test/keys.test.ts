import { randomBytes } from "node:crypto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../server/src/config.js";
import { openStore } from "../../server/src/storage/open.js";
import {
  STORE,
  STORE_UNAVAILABLE,
  createTestDatabase,
  send,
  type TestDatabase,
} from "../../server/test/harness.js";
import { freePort } from "../../server/test/postgres-cluster.js";
import { killAll, tessera, waitFor } from "./run-cli.js";

describe.skipIf(STORE_UNAVAILABLE)(`tessera keys rotate and rewrap (${STORE})`, () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  let url: string;

  beforeEach(async () => {
    database = await createTestDatabase();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = {
      ...database.env,
      TESSERA_PORT: String(port),
      TESSERA_MASTER_KEY: randomBytes(32).toString("base64"),
      TESSERA_BOOTSTRAP_KEY: `bootstrap-${randomBytes(16).toString("hex")}`,
    };
  });

  afterEach(async () => {
    killAll();
    await database.drop();
  });

  async function keyVersions(): Promise<number[]> {
    const store = openStore(loadConfig(env).database);
    try {
      const rows = await store.db.selectFrom("tokens").select("key_version").execute();
      return rows.map((r) => r.key_version);
    } finally {
      await store.close();
    }
  }

  it("re-encrypts every token under a new data key while the server keeps serving them", async () => {
    const server = tessera(["serve"], env, database.dataDir);
    await waitFor(server, /listening on/);
    const admin = env.TESSERA_BOOTSTRAP_KEY!;
    const app = await send(url, admin, "POST", "/applications", {
      body: {
        name: "reader",
        type: "private",
        rules: [
          { priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read"] },
        ],
      },
    });
    const key = app.body.key as string;
    const tokens: { id: string; data: string }[] = [];
    for (let i = 0; i < 30; i++) {
      const data = `secret-${i}`;
      const created = await send(url, key, "POST", "/tokens", { body: { data } });
      expect(created.status).toBe(201);
      tokens.push({ id: created.body.id as string, data });
    }
    expect(new Set(await keyVersions())).toEqual(new Set([1]));

    const rotate = tessera(["keys", "rotate"], env, database.dataDir);
    expect(await rotate.exited).toBe(0);
    expect(rotate.stdout).toMatch(/^tenant [0-9a-f-]{36}: data key version 2$/m);

    // Reads go on while the rewrap runs in small batches.
    const rewrap = tessera(["keys", "rewrap", "--batch-size", "7"], env, database.dataDir);
    const reads: Promise<number>[] = [];
    while (rewrap.child.exitCode === null) {
      for (const token of tokens.slice(0, 5))
        reads.push(send(url, key, "GET", `/tokens/${token.id}`).then((r) => r.status));
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await rewrap.exited).toBe(0);
    expect(rewrap.stderr).toMatch(/30\/30 tokens/);
    expect(rewrap.stderr).toContain("Re-encrypted 30 tokens.");
    expect(new Set(await Promise.all(reads))).toEqual(new Set([200]));
    expect(new Set(await keyVersions())).toEqual(new Set([2]));

    for (const token of tokens) {
      const read = await send(url, key, "GET", `/tokens/${token.id}`);
      expect(read.body.data).toBe(token.data);
    }
    const again = tessera(["keys", "rewrap"], env, database.dataDir);
    expect(await again.exited).toBe(0);
    expect(again.stderr).toContain("Re-encrypted 0 tokens.");
  });

  it("rejects a bad subcommand or batch size with exit 2, and an unknown tenant with exit 1", async () => {
    const bad = tessera(["keys", "spin"], env, database.dataDir);
    expect(await bad.exited).toBe(2);
    expect(bad.stderr).toContain("unknown command 'keys spin': use one of rotate, rewrap");
    const size = tessera(["keys", "rewrap", "--batch-size", "0"], env, database.dataDir);
    expect(await size.exited).toBe(2);
    expect(size.stderr).toContain("--batch-size must be an integer from 1 to 10000");
    const unknown = tessera(["keys", "rotate", "--tenant", "no-such-tenant"], env, database.dataDir);
    expect(await unknown.exited).toBe(1);
    expect(unknown.stderr).toContain("no such tenant: no-such-tenant");
    expect(unknown.stderr).not.toMatch(/\n\s+at /);
  });
});
