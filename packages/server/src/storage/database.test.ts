import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  TEST_MASTER_KEY,
  createTestDatabase,
  type TestDatabase,
} from "../../test/harness.js";
import { loadConfig } from "../config.js";
import { type Executor, type Store, type WriteContext } from "./database.js";
import { openStore } from "./open.js";
import { migrateToLatest } from "./migrate.js";

/** A reactor row as the triggers of migration 0010 see it; its content does not matter here. */
const reactorRow = (tenantId: string, id: string, applicationId: string | null) => ({
  id,
  tenant_id: tenantId,
  name: "r",
  name_folded: "r",
  code: "module.exports = async () => ({})",
  configuration: "x",
  key_version: 1,
  application_id: applicationId,
  version: 1,
  created_by: null,
  created_at: "2026-01-01T00:00:00.000Z",
  modified_by: null,
  modified_at: null,
});

const meta = (db: Executor, key: string) =>
  db.selectFrom("tessera_meta").select("value").where("key", "=", key).executeTakeFirst();

/** The write path's promises on a real store: what resolves is committed, failures stay alone. */
describe.skipIf(STORE_UNAVAILABLE)("Store.write", () => {
  let database: TestDatabase;
  let store: Store;

  beforeEach(async () => {
    database = await createTestDatabase();
    store = database.open();
    await migrateToLatest(store);
  });
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });

  const put =
    (key: string, fail = false) =>
    ({ db: trx }: WriteContext) =>
      trx
        .insertInto("tessera_meta")
        .values({ key, value: "v" })
        .execute()
        .then(() => {
          if (fail) throw new Error(`refused ${key}`);
        });

  it("commits lazy and durable writes alike, each in a group with others, a failing one rolled back alone", async () => {
    const results = await Promise.allSettled([
      store.write(put("lazy-1"), { lazy: true }),
      store.write(put("durable-1")),
      store.write(put("lazy-fails", true), { lazy: true }),
      store.write(put("lazy-2"), { lazy: true }),
    ]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
    // Another connection (another process would see the same) finds every write that resolved.
    const other = database.open();
    try {
      for (const key of ["lazy-1", "durable-1", "lazy-2"])
        expect(await meta(other.db, key)).toEqual({ value: "v" });
      expect(await meta(other.db, "lazy-fails")).toBeUndefined();
    } finally {
      await other.close();
    }
  });

  it("commits a write alone before it resolves, visible to another connection", async () => {
    await store.write(
      ({ db, run }) => run(db.insertInto("tessera_meta").values({ key: "alone", value: "v" }).compile()),
      { alone: true, lazy: true },
    );
    const other = database.open();
    try {
      expect(await meta(other.db, "alone")).toEqual({ value: "v" });
    } finally {
      await other.close();
    }
  });

  it.skipIf(STORE !== "postgres")(
    "refuses a second statement in a write alone, which PostgreSQL runs without a transaction around it",
    async () => {
      const insert = (key: string) =>
        store.db.insertInto("tessera_meta").values({ key, value: "v" }).compile();
      await expect(
        store.write(
          async ({ run }) => {
            await run(insert("alone-1"));
            await run(insert("alone-2"));
          },
          { alone: true },
        ),
      ).rejects.toThrow("a write alone runs one statement");
      expect(await meta(store.db, "alone-2")).toBeUndefined();
    },
  );

  it("answers precompiled reads (one row, rows, rows as arrays) again after a migration changed the table under them", async () => {
    // One connection, so that the second read meets the statement the first prepared on it (PostgreSQL keeps
    // named statements per connection); another instance then adds a column, as a newer version's migration
    // would during a rolling upgrade.
    const single = openStore(loadConfig({ ...database.env, TESSERA_MASTER_KEY: TEST_MASTER_KEY }).database, {
      poolSize: 1,
    });
    try {
      await single.write(put("prepared"));
      const read = store.db.selectFrom("tessera_meta").selectAll().where("key", "=", "prepared").compile();
      expect(await single.readOne(read)).toEqual({ key: "prepared", value: "v" });
      expect(await single.readAll(read)).toEqual([{ key: "prepared", value: "v" }]);
      expect(await single.readArrays(read)).toEqual([["prepared", "v"]]);
      await store.db.schema.alterTable("tessera_meta").addColumn("added", "text").execute();
      expect(await single.readOne(read)).toEqual({ key: "prepared", value: "v", added: null });
      expect(await single.readAll(read)).toEqual([{ key: "prepared", value: "v", added: null }]);
      expect(await single.readArrays(read)).toEqual([["prepared", "v", null]]);
    } finally {
      await single.close();
    }
  });

  it("gives a snapshot transaction one committed state, whatever commits between its reads", async () => {
    await store.write(put("before"));
    const other = database.open();
    try {
      const seen = await store.transaction(
        async (trx) => {
          const first = await meta(trx, "before");
          // Another connection (as another instance would) commits between the two reads.
          await other.write(put("between"));
          expect(await meta(other.db, "between")).toEqual({ value: "v" });
          return [first, await meta(trx, "between")];
        },
        { snapshot: true },
      );
      expect(seen).toEqual([{ value: "v" }, undefined]);
    } finally {
      await other.close();
    }
  });

  it.skipIf(STORE !== "sqlite")(
    "writes after its reads though another process tried to commit between them",
    async () => {
      // As `tessera init --regenerate-bootstrap-key` beside a running server: a deferred transaction failed at once
      // with SQLITE_BUSY_SNAPSHOT when the other process committed between its read and its write, busy timeout or
      // not. Taking the write lock at begin makes the other process wait for the commit instead. The other
      // process is a real one: in this process a busy wait would block the thread the transaction runs on.
      await store.write(put("mine"));
      const child = spawn(
        process.execPath,
        [
          "-e",
          `const db = new (require("better-sqlite3"))(process.argv[1]);
           db.pragma("busy_timeout = 5000");
           process.stdout.write("ready\\n");
           process.stdin.once("data", () => {
             db.prepare("insert into tessera_meta (key, value) values ('between', 'v')").run();
             process.stdout.write("committed\\n");
             process.exit(0);
           });`,
          path.join(database.dataDir, "tessera.db"),
        ],
        { cwd: new URL("../..", import.meta.url).pathname, stdio: ["pipe", "pipe", "pipe"] },
      );
      let out = "";
      let err = "";
      child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (err += chunk.toString()));
      const exited = new Promise<number | null>((resolve) => child.on("exit", resolve));
      try {
        await expect.poll(() => out, { timeout: 30_000 }).toContain("ready");
        const seen = await store.transaction(async (trx) => {
          const read = await meta(trx, "mine");
          child.stdin.write("go\n");
          // Long enough for the other process to commit, had it not had to wait for this transaction.
          await new Promise((resolve) => setTimeout(resolve, 300));
          expect(out).not.toContain("committed");
          await trx.updateTable("tessera_meta").set({ value: "w" }).where("key", "=", "mine").execute();
          return read;
        });
        expect(await exited, err).toBe(0);
        expect(seen).toEqual({ value: "v" });
        expect(await meta(store.db, "mine")).toEqual({ value: "w" });
        expect(await meta(store.db, "between")).toEqual({ value: "v" });
      } finally {
        if (child.exitCode === null) child.kill("SIGKILL");
      }
    },
  );

  it.skipIf(STORE !== "sqlite")("keeps a lazy write that resolved when the process is killed at once", () => {
    // A child process writes lazily, prints once the write resolved, and is killed by SIGKILL right after: the
    // commit is in the WAL (the OS has it), even though the lazy fsync had no time to run.
    const script = `
      const { loadConfig } = await import(${JSON.stringify(new URL("../config.ts", import.meta.url).pathname)});
      const { openStore } = await import(${JSON.stringify(new URL("./open.ts", import.meta.url).pathname)});
      const store = openStore(loadConfig(JSON.parse(process.env.CONFIG)).database);
      await store.write(({ db: trx }) => trx.insertInto("tessera_meta").values({ key: "killed", value: "v" }).execute(), { lazy: true });
      process.kill(process.pid, "SIGKILL");
    `;
    const child = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
      env: {
        ...process.env,
        CONFIG: JSON.stringify({ ...database.env, TESSERA_MASTER_KEY: TEST_MASTER_KEY }),
      },
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(child.signal, child.stderr).toBe("SIGKILL");
    return meta(store.db, "killed").then((row) => expect(row).toEqual({ value: "v" }));
  });

  it.skipIf(STORE !== "sqlite")(
    "keeps the WAL bounded under a stream of commits, with its checkpoints on the background thread",
    async () => {
      // 24,000 commits of 2 KB each: about 56 MB of WAL frames if nothing were ever copied back and restarted.
      const wal = path.join(database.dataDir, "tessera.db-wal");
      const value = "x".repeat(2_000);
      let largest = 0;
      for (let round = 0; round < 120; round++) {
        await Promise.all(
          Array.from({ length: 200 }, (_, i) =>
            store.write(
              ({ db: trx }) =>
                trx
                  .insertInto("tessera_meta")
                  .values({ key: `k${round}-${i}`, value })
                  .execute(),
              {
                lazy: true,
              },
            ),
          ),
        );
        largest = Math.max(largest, statSync(wal).size);
        // Yield to the checkpoint thread now and then, as a server's idle moments do.
        if (round % 2 === 1) await new Promise((resolve) => setTimeout(resolve, 60));
      }
      expect(largest).toBeGreaterThan(0);
      // A bound far above what the checkpoints leave (about 3 MB) and far below what none would.
      expect(largest).toBeLessThan(16 * 1024 * 1024);
    },
  );

  it("reads both versions at once where there are versions (SQLite), and none on PostgreSQL", async () => {
    if (STORE === "postgres") {
      expect(store.versions()).toBeUndefined();
      return;
    }
    const tenant = { id: "t-versions", name: "t", created_by: null, created_at: "2026-01-01T00:00:00.000Z" };
    await store.db.insertInto("tenants").values(tenant).execute();
    const before = store.versions()!;
    expect(before).toEqual({ config: store.configVersion(), tokens: store.tokenVersion() });
    await store.db
      .insertInto("reactors")
      .values(reactorRow(tenant.id, "r-versions", null))
      .execute();
    const after = store.versions()!;
    expect(after).toEqual({ config: store.configVersion(), tokens: store.tokenVersion() });
    expect(after.config).toBeGreaterThan(before.config);
    expect(after.tokens).toBe(before.tokens);
  });

  it.skipIf(STORE !== "sqlite")(
    "moves the token version with token writes only, not with other commits",
    async () => {
      const tenant = { id: "t-gen", name: "t", created_by: null, created_at: "2026-01-01T00:00:00.000Z" };
      await store.db.insertInto("tenants").values(tenant).execute();
      const before = store.tokenVersion();
      await store.write(put("not-a-token"), { lazy: true });
      expect(store.tokenVersion()).toBe(before);
      const token = {
        tenant_id: tenant.id,
        id: "tok",
        type: "token",
        ciphertext: "x",
        key_version: 1,
        fingerprint: null,
        fingerprint_expression: null,
        mask: null,
        search_indexes: "[]",
        metadata: "{}",
        containers: "[]",
        expires_at: null,
        created_by: null,
        created_at: tenant.created_at,
        modified_by: null,
        modified_at: null,
      };
      await store.db.insertInto("tokens").values(token).execute();
      const inserted = store.tokenVersion()!;
      expect(inserted).toBeGreaterThan(before!);
      await store.db.updateTable("tokens").set({ metadata: '{"a":"b"}' }).where("id", "=", "tok").execute();
      const updated = store.tokenVersion()!;
      expect(updated).toBeGreaterThan(inserted);
      await store.db.deleteFrom("tokens").where("id", "=", "tok").execute();
      expect(store.tokenVersion()!).toBeGreaterThan(updated);
    },
  );

  it.skipIf(STORE !== "sqlite")(
    "moves the config version with every Application and reactor write, cascades included, and nothing else",
    async () => {
      const at = "2026-01-01T00:00:00.000Z";
      const tenant = { id: "t-config", name: "t", created_by: null, created_at: at };
      await store.db.insertInto("tenants").values(tenant).execute();
      let last = store.configVersion()!;
      const moved = () => {
        const now = store.configVersion()!;
        const grew = now > last;
        last = now;
        return grew;
      };
      await store.write(put("not-config"), { lazy: true });
      expect(moved()).toBe(false);
      await store.db
        .insertInto("applications")
        .values({
          id: "app",
          tenant_id: tenant.id,
          name: "a",
          type: "private",
          key_hash: "h",
          permissions: "[]",
          rules: "[]",
          created_by: null,
          created_at: at,
          modified_by: null,
          modified_at: null,
          expires_at: null,
        })
        .execute();
      expect(moved()).toBe(true);
      await store.db.updateTable("applications").set({ permissions: '["token:read"]' }).execute();
      expect(moved()).toBe(true);
      await store.db
        .insertInto("reactors")
        .values(reactorRow(tenant.id, "r", "app"))
        .execute();
      expect(moved()).toBe(true);
      await store.db.updateTable("reactors").set({ version: 2 }).execute();
      expect(moved()).toBe(true);
      // Deleting the tenant removes both rows through foreign-key cascades, which must move it as well.
      await store.db.deleteFrom("tenants").where("id", "=", tenant.id).execute();
      expect(moved()).toBe(true);
      expect(await store.db.selectFrom("applications").select("id").execute()).toEqual([]);
      await store.write(put("still-not-config"), { lazy: true });
      expect(moved()).toBe(false);
    },
  );
});

/** The SQLite store's files on disk: the WAL's size once a burst of writes is over. */
describe.skipIf(STORE !== "sqlite")("the SQLite WAL file", () => {
  const LIMIT_MIB = 1;
  const LIMIT = LIMIT_MIB * 1024 * 1024;
  let dir: string;
  let store: Store;
  let wal: string;

  beforeEach(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "tessera-wal-"));
    const config = loadConfig({
      TESSERA_DATA_DIR: dir,
      TESSERA_MASTER_KEY: TEST_MASTER_KEY,
      TESSERA_SQLITE_WAL_LIMIT_MB: String(LIMIT_MIB),
    });
    store = openStore(config.database);
    wal = path.join(dir, "tessera.db-wal");
    await migrateToLatest(store);
  });
  afterEach(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** One transaction of about 8 MB, as a bulk import's group commits make: the log file grows to hold it. */
  async function burst(): Promise<void> {
    const value = "v".repeat(4_000);
    await store.transaction(async (trx) => {
      for (let i = 0; i < 2_000; i++) {
        await trx
          .insertInto("tessera_meta")
          .values({ key: `burst-${i}`, value })
          .execute();
      }
    });
    expect(statSync(wal).size).toBeGreaterThan(4 * LIMIT);
  }

  it("cuts the WAL file back to TESSERA_SQLITE_WAL_LIMIT_MB while commits keep coming", async () => {
    await burst();
    // Commits every few milliseconds: the store is never idle, so only SQLite's journal_size_limit can shrink the
    // file, when a commit starts the log afresh once the checkpoint thread has copied the burst.
    const deadline = Date.now() + 20_000;
    let commits = 0;
    while (statSync(wal).size > LIMIT && Date.now() < deadline) {
      await store.write(({ db: trx }) =>
        trx
          .insertInto("tessera_meta")
          .values({ key: `after-${commits++}`, value: "v" })
          .execute(),
      );
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(statSync(wal).size).toBeLessThanOrEqual(LIMIT);
    expect(await meta(store.db, "burst-1999")).toEqual({ value: "v".repeat(4_000) });
  });

  it("truncates a WAL file beyond the limit once no commit has come for a while", async () => {
    await burst();
    const deadline = Date.now() + 20_000;
    while (statSync(wal).size > LIMIT && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(statSync(wal).size).toBeLessThanOrEqual(LIMIT);
    expect(await meta(store.db, "burst-0")).toEqual({ value: "v".repeat(4_000) });
  });
});
