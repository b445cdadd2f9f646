import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../server/src/config.js";
import { openStore } from "../../server/src/storage/open.js";
import {
  STORE,
  STORE_UNAVAILABLE,
  createTestDatabase,
  type TestDatabase,
} from "../../server/test/harness.js";
import { killAll, tessera } from "./run-cli.js";

describe.skipIf(STORE_UNAVAILABLE)(`tessera keys rotate-master (${STORE})`, () => {
  let database: TestDatabase;
  let env: Record<string, string>;
  const oldKey = randomBytes(32).toString("base64");
  const newKey = randomBytes(32).toString("base64");

  beforeEach(async () => {
    database = await createTestDatabase();
    env = { ...database.env, TESSERA_MASTER_KEY: oldKey, TESSERA_LOG_LEVEL: "error" };
  });
  afterEach(async () => {
    killAll();
    await database.drop();
  });

  async function versions(): Promise<(string | null)[]> {
    const store = openStore(loadConfig(env).database);
    try {
      const rows = await store.db.selectFrom("tenant_keys").select("master_key_version").execute();
      return rows.map((row) => row.master_key_version);
    } finally {
      await store.close();
    }
  }

  it("re-wraps every tenant key under the key of --to, with a progress bar, and is refused without it", async () => {
    expect(await tessera(["init"], env, database.dataDir).exited).toBe(0);
    const before = await versions();
    expect(before.length).toBeGreaterThanOrEqual(5);

    const missing = tessera(["keys", "rotate-master"], env, database.dataDir);
    expect(await missing.exited).toBe(2);
    expect(missing.stderr).toContain("--to <file> is required");
    const foreign = path.join(database.dataDir, "foreign.env");
    writeFileSync(foreign, `TESSERA_MASTER_KEY=${newKey}\nTESSERA_PORT=1\n`);
    const refused = tessera(["keys", "rotate-master", "--to", foreign], env, database.dataDir);
    expect(await refused.exited).toBe(78);
    expect(refused.stderr).toContain(
      "may hold only a master key provider and its settings, not TESSERA_PORT",
    );

    const target = path.join(database.dataDir, "new-master-key.env");
    writeFileSync(target, `TESSERA_MASTER_KEY=${newKey}\n`, { mode: 0o600 });
    const rotated = tessera(["keys", "rotate-master", "--to", target], env, database.dataDir);
    expect(await rotated.exited, rotated.stderr).toBe(0);
    expect(rotated.stderr).toMatch(
      new RegExp(`Re-wrapped ${before.length} tenant keys; every key is now wrapped by raw:[0-9a-f]{16}\\.`),
    );
    // The progress bar, as it is drawn where stderr is not a terminal: a line per tenth, the last one full.
    expect(rotated.stderr).toContain(`] ${before.length}/${before.length} keys  to raw:`);
    expect(rotated.stderr).not.toContain(newKey);
    const after = await versions();
    expect(new Set(after).size).toBe(1);
    expect(after[0]).toMatch(/^raw:[0-9a-f]{16}$/);

    // The old key alone no longer opens the store (exit 84, naming the version the rows need); the new one does.
    const old = tessera(["migrate"], env, database.dataDir);
    expect(await old.exited).toBe(84);
    expect(old.stderr).toContain(`they are recorded as wrapped by master key ${after[0]}`);
    const fresh = { ...env, TESSERA_MASTER_KEY: newKey };
    expect(await tessera(["migrate"], fresh, database.dataDir).exited).toBe(0);
    // Resumable: run again, nothing is left.
    const again = tessera(["keys", "rotate-master", "--to", target], fresh, database.dataDir);
    expect(await again.exited, again.stderr).toBe(0);
    expect(again.stderr).toContain("Re-wrapped 0 tenant keys");
  });
});
