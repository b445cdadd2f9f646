import { createHash, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import SQLite from "better-sqlite3";
import { createLogger } from "./observability/logging.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { STORE, STORE_UNAVAILABLE, createTestDatabase, send, type TestDatabase } from "../test/harness.js";
import { ConfigError, loadConfig } from "./config.js";
import { createKeyring } from "./crypto/keyring.js";
import { bootstrap, openVault, serve } from "./main.js";
import { migrateThrough } from "./storage/migrate.js";
import { MasterKeyMismatchError } from "./keys/providers/open.js";
import { tenantStore } from "./tenants/store.js";

const silent = createLogger("silent");
const quiet = { write: () => true };
const modeOf = (file: string) => (statSync(file).mode & 0o777).toString(8);
const digest = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

/** A data directory that does not exist yet, inside a temp dir removed after each test. */
describe.skipIf(STORE !== "sqlite")("the embedded store's files", () => {
  let root: string;
  let dataDir: string;
  let umask: number;

  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), "tessera-files-"));
    dataDir = path.join(root, "nested", "data");
    // The most permissive umask: whatever mode the files get is then Tessera's own choice, not the shell's.
    umask = process.umask(0);
  });
  afterEach(() => {
    process.umask(umask);
    rmSync(root, { recursive: true, force: true });
  });

  const file = (name: string) => path.join(dataDir, name);

  it("are the server user's alone: the directory 0700, the database, its WAL and SHM and the dev key 0600", async () => {
    const key = `files-${randomBytes(24).toString("hex")}`;
    const config = loadConfig({
      TESSERA_DATA_DIR: dataDir,
      TESSERA_PORT: "0",
      TESSERA_BOOTSTRAP_KEY: key,
      TESSERA_LOG_LEVEL: "silent",
    });
    const server = await serve(config, quiet);
    try {
      const writer = await send(server.url, key, "POST", "/applications", {
        body: { name: "writer", type: "private", permissions: ["token:create"] },
      });
      expect(writer.status, writer.text).toBe(201);
      for (let i = 0; i < 20; i++) {
        const created = await send(server.url, writer.body.key, "POST", "/tokens", {
          body: { type: "token", data: `secret ${i}` },
        });
        expect(created.status, created.text).toBe(201);
      }
      // Read while the server runs: SQLite removes the WAL and SHM when the last connection closes.
      expect(statSync(file("tessera.db-wal")).size).toBeGreaterThan(0);
      expect({
        dir: modeOf(dataDir),
        db: modeOf(file("tessera.db")),
        wal: modeOf(file("tessera.db-wal")),
        shm: modeOf(file("tessera.db-shm")),
        key: modeOf(file("master.key")),
      }).toEqual({ dir: "700", db: "600", wal: "600", shm: "600", key: "600" });
    } finally {
      await server.close();
    }
  });

  it("narrows a store left readable by others (an older version, a crash) when it opens", async () => {
    const config = loadConfig({ TESSERA_DATA_DIR: dataDir, TESSERA_LOG_LEVEL: "silent" });
    const first = await openVault(config, silent);
    await bootstrap(first, config, quiet);
    await first.close();
    // Another connection keeps the WAL and SHM in place, as a process that died with the store open would.
    const other = new SQLite(file("tessera.db"));
    try {
      other.exec("insert into tessera_meta (key, value) values ('left', 'open')");
      for (const name of ["tessera.db", "tessera.db-wal", "tessera.db-shm"]) chmodSync(file(name), 0o644);
      const vault = await openVault(config, silent);
      try {
        expect([
          modeOf(file("tessera.db")),
          modeOf(file("tessera.db-wal")),
          modeOf(file("tessera.db-shm")),
        ]).toEqual(["600", "600", "600"]);
      } finally {
        await vault.close();
      }
    } finally {
      other.close();
    }
  });

  it("refuses an existing store whose development key file is gone, and writes no new key", async () => {
    const config = loadConfig({ TESSERA_DATA_DIR: dataDir, TESSERA_LOG_LEVEL: "silent" });
    const first = await openVault(config, silent);
    expect(await bootstrap(first, config, quiet)).toBeDefined();
    await first.close();
    unlinkSync(file("master.key"));
    const before = digest(file("tessera.db"));

    const refused = await openVault(config, silent).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).problems).toEqual([
      `the master key file ${file("master.key")} does not exist, but this store holds data encrypted under a ` +
        "master key: restore that file, or give that key in TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE. No key " +
        "was generated, since a new one could not decrypt the store.",
    ]);
    expect(existsSync(file("master.key"))).toBe(false);
    expect(digest(file("tessera.db"))).toBe(before);
  });

  it("generates the development key for a store that holds no keys yet, and uses it from then on", async () => {
    const config = loadConfig({ TESSERA_DATA_DIR: dataDir, TESSERA_LOG_LEVEL: "silent" });
    const first = await openVault(config, silent);
    await first.close();
    // Migrated but never bootstrapped: nothing is encrypted yet, so losing this key loses nothing.
    unlinkSync(file("master.key"));
    const second = await openVault(config, silent);
    try {
      expect(await bootstrap(second, config, quiet)).toBeDefined();
      expect(modeOf(file("master.key"))).toBe("600");
    } finally {
      await second.close();
    }
    const again = await openVault(config, silent);
    await again.close();
  });
});

describe.skipIf(STORE_UNAVAILABLE)(`a start with the wrong master key (${STORE})`, () => {
  let database: TestDatabase;

  beforeEach(async () => {
    database = await createTestDatabase();
  });
  afterEach(async () => {
    await database?.drop();
  });

  it("is refused before any migration runs", async () => {
    // A store made by an older version (the first migration only) under one master key...
    const store = database.open();
    try {
      await migrateThrough(store, "0001-initial");
      const tenant = { id: "t-old", name: "old", createdBy: null, createdAt: "2026-01-01T00:00:00.000Z" };
      await tenantStore(store.db).insert(tenant);
      // The rows as that version wrote them, without the columns later migrations add.
      const keys = await createKeyring(randomBytes(32)).newTenantKeys(tenant.id);
      await store.db
        .insertInto("tenant_keys")
        .columns(["tenant_id", "purpose", "version", "wrapped_key", "created_at"])
        .values(
          keys.map((k) => ({
            tenant_id: tenant.id,
            purpose: k.purpose,
            version: k.version,
            wrapped_key: k.wrapped,
            created_at: tenant.createdAt,
          })),
        )
        .execute();
    } finally {
      await store.close();
    }
    // ...started by a newer one with another key.
    const config = loadConfig({
      ...database.env,
      TESSERA_MASTER_KEY: randomBytes(32).toString("base64"),
      TESSERA_LOG_LEVEL: "silent",
    });
    await expect(openVault(config, silent)).rejects.toBeInstanceOf(MasterKeyMismatchError);

    const after = database.open();
    try {
      const applied = await after.db
        .selectFrom("kysely_migration" as never)
        .select("name" as never)
        .execute();
      expect(applied).toEqual([{ name: "0001-initial" }]);
    } finally {
      await after.close();
    }
  });
});
