import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
import { killAll, run, tessera, waitFor } from "./run-cli.js";

describe.skipIf(STORE_UNAVAILABLE)(`tessera audit verify (${STORE})`, () => {
  let database: TestDatabase;
  let env: Record<string, string>;

  const withStore = async <T>(work: (store: ReturnType<typeof openStore>) => Promise<T>): Promise<T> => {
    const store = openStore(loadConfig(env).database);
    try {
      return await work(store);
    } finally {
      await store.close();
    }
  };

  beforeAll(async () => {
    database = await createTestDatabase();
    const port = await freePort();
    env = {
      ...database.env,
      TESSERA_PORT: String(port),
      TESSERA_MASTER_KEY: randomBytes(32).toString("base64"),
      TESSERA_BOOTSTRAP_KEY: `bootstrap-${randomBytes(16).toString("hex")}`,
      TESSERA_JOB_POLL_MS: "100",
    };
    const server = tessera(["serve"], env, database.dataDir);
    await waitFor(server, /listening on/);
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; i < 5; i++) {
      const created = await send(url, env.TESSERA_BOOTSTRAP_KEY!, "POST", "/applications", {
        body: { name: `app ${i}`, type: "private", permissions: ["token:read"] },
      });
      expect(created.status).toBe(201);
    }
    // A graceful stop seals what is left.
    server.child.kill("SIGTERM");
    expect(await server.exited).toBe(0);
  });
  afterAll(async () => {
    killAll();
    await database?.drop();
  });

  it("finds every chain intact and prints its head, exit 0", async () => {
    const verified = await run(["audit", "verify"], env, database.dataDir);
    expect(verified.code, verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(
      /^tenant [0-9a-f-]{36}: 6 entries, chain intact, head 6 [A-Za-z0-9_-]{43}\n$/,
    );
    const json = await run(["audit", "verify", "--json"], env, database.dataDir);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      rows: 6,
      problems: [],
      staleUnsealed: 0,
      head: { seq: 6 },
    });
  });

  it("reports a changed entry and exits 1", async () => {
    await withStore((store) =>
      store.db.updateTable("audit_log").set({ action: "application.delete" }).where("seq", "=", 3).execute(),
    );
    const verified = await run(["audit", "verify"], env, database.dataDir);
    expect(verified.code).toBe(1);
    expect(verified.stdout).toMatch(/chain BROKEN/);
    expect(verified.stdout).toMatch(/- row 3 \([0-9a-f-]{36}\) does not match its link/);
  });
});
