import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadConfig, loadMasterKeyFile } from "../config.js";
import { createLogger, openVault } from "../main.js";
import { openTargetProvider } from "./providers/open.js";
import {
  ManualClock,
  STORE,
  STORE_UNAVAILABLE,
  TEST_MASTER_KEY,
  createTestDatabase,
  startTestServer,
  type TestDatabase,
  type TestServer,
} from "../../test/harness.js";
import { SOFTHSM_MISSING, createSoftHsm, type SoftHsm } from "../../test/softhsm.js";

const silent = createLogger({ logLevel: "silent" });
const CARD = "4242424242424242";
const RULES = [
  { priority: 1, container: "/", transform: "reveal", permissions: ["token:create", "token:read"] },
];

interface Made {
  readonly key: string;
  readonly id: string;
  readonly data: string;
}

/** Every tenant_keys row as stored. */
async function keyRows(database: TestDatabase) {
  const store = database.open();
  try {
    return await store.db.selectFrom("tenant_keys").selectAll().execute();
  } finally {
    await store.close();
  }
}

describe.skipIf(STORE_UNAVAILABLE || SOFTHSM_MISSING !== undefined)(
  `master key rotation from a raw key to a PKCS#11 token, under load on two instances (${STORE})`,
  () => {
    let hsm: SoftHsm;
    let database: TestDatabase;
    const shared = { bootstrapKey: "", clock: new ManualClock() };
    const started: TestServer[] = [];

    beforeAll(async () => {
      hsm = createSoftHsm();
      hsm.addToken("tessera", [{ label: "tessera-master" }]);
      database = await createTestDatabase();
    });
    afterAll(async () => {
      for (const server of started) await server.close().catch(() => undefined);
      await database?.drop();
      hsm?.remove();
    });

    it("re-wraps every tenant key while both instances create and read, then serves without the old key", async () => {
      const sharing = { ...shared, database, bootstrapKey: `test-bootstrap-rotation-${Date.now()}` };
      const pkcs11File = path.join(hsm.dir, "new-master-key.env");
      writeFileSync(
        pkcs11File,
        [
          "TESSERA_MASTER_KEY_PROVIDER=pkcs11",
          `TESSERA_PKCS11_MODULE=${hsm.module}`,
          "TESSERA_PKCS11_TOKEN_LABEL=tessera",
          `TESSERA_PKCS11_PIN_FILE=${hsm.pinFile}`,
          "TESSERA_PKCS11_KEY_LABEL=tessera-master",
          "",
        ].join("\n"),
      );
      const rawFile = path.join(hsm.dir, "old-master-key.env");
      writeFileSync(rawFile, `TESSERA_MASTER_KEY=${TEST_MASTER_KEY}\n`, { mode: 0o600 });
      const pkcs11Env = {
        TESSERA_MASTER_KEY: "",
        TESSERA_MASTER_KEY_PROVIDER: "pkcs11",
        TESSERA_PKCS11_MODULE: hsm.module,
        TESSERA_PKCS11_TOKEN_LABEL: "tessera",
        TESSERA_PKCS11_PIN_FILE: hsm.pinFile,
        TESSERA_PKCS11_KEY_LABEL: "tessera-master",
      };
      const during = { ...pkcs11Env, TESSERA_MASTER_KEY_PREVIOUS_FILE: rawFile };

      // Before: a store made under the raw key, with two tenants and their tokens.
      const old = await startTestServer({}, { sharing });
      const made: Made[] = [];
      const tenantKeys: string[] = [sharing.bootstrapKey];
      for (const name of ["second", "third"]) {
        const tenant = await old.request("POST", "/tenants", { body: { name } });
        expect(tenant.status, tenant.text).toBe(201);
        tenantKeys.push(tenant.body.key);
      }
      const applications: string[] = [];
      for (const key of tenantKeys) {
        const app = await old.request("POST", "/applications", {
          key,
          body: { name: "backend", type: "private", rules: RULES },
        });
        expect(app.status, app.text).toBe(201);
        applications.push(app.body.key);
        for (let i = 0; i < 5; i += 1) {
          const created = await old.request("POST", "/tokens", { key: app.body.key, body: { data: CARD } });
          expect(created.status, created.text).toBe(201);
          made.push({ key: app.body.key, id: created.body.id, data: CARD });
        }
      }
      await old.close();
      const before = await keyRows(database);
      expect(before.length).toBeGreaterThanOrEqual(10);
      expect(before.every((row) => Buffer.from(row.wrapped_key, "base64")[0] === 0x01)).toBe(true);

      // Two instances that wrap with the token and still read the raw key's rows.
      const a = await startTestServer(during, { sharing });
      started.push(a);
      const b = await startTestServer(during, { sharing });
      started.push(b);
      const instances = [a, b];

      const failures: string[] = [];
      let operations = 0;
      let stopping = false;
      const load = (async () => {
        for (let round = 0; !stopping; round += 1) {
          const here = instances[round % 2]!;
          const there = instances[(round + 1) % 2]!;
          const key = applications[round % applications.length]!;
          const created = await here.request("POST", "/tokens", { key, body: { data: CARD } });
          if (created.status !== 201)
            failures.push(`create on ${round % 2}: ${created.status} ${created.text}`);
          else made.push({ key, id: created.body.id, data: CARD });
          const token = made[round % made.length]!;
          const read = await there.request("GET", `/tokens/${token.id}`, { key: token.key });
          if (read.status !== 200 || read.body.data !== token.data) {
            failures.push(`read on ${(round + 1) % 2}: ${read.status} ${read.text}`);
          }
          if (round % 10 === 5) {
            // Every instance reloads its tenants' key rows: some are re-wrapped by now, some are not.
            sharing.clock.advance(31_000);
            const tenant = await here.request("POST", "/tenants", { body: { name: `during ${round}` } });
            if (tenant.status !== 201)
              failures.push(`tenant on ${round % 2}: ${tenant.status} ${tenant.text}`);
          }
          operations += 2;
        }
      })();

      // The command's work, with the instances' environment, as `tessera keys rotate-master --to` runs it.
      const config = loadConfig({ ...database.env, ...during });
      const to = await openTargetProvider(loadMasterKeyFile(pkcs11File));
      // Each wrap made slow, so that the rotation spans many requests of the load.
      const slowTo = {
        keyVersion: to.keyVersion,
        unwrap: (wrapped: Buffer, context: string) => to.unwrap(wrapped, context),
        wrap: async (key: Buffer, context: string) => {
          await new Promise((resolve) => setTimeout(resolve, 30));
          return to.wrap(key, context);
        },
      };
      const progress: { done: number; total: number }[] = [];
      let result;
      try {
        while (operations < 20) await new Promise((resolve) => setTimeout(resolve, 50));
        const vault = await openVault(config, silent, sharing.clock);
        try {
          const opsBefore = operations;
          result = await vault.masterKeys.rewrapAll(slowTo, { onProgress: (p) => progress.push(p) });
          expect(operations - opsBefore, "requests served during the rotation").toBeGreaterThanOrEqual(10);
          // Resumable: a second run finds nothing left.
          expect(await vault.masterKeys.rewrapAll(to)).toEqual({ rewrapped: 0, remaining: 0 });
          while (operations < opsBefore + 20) await new Promise((resolve) => setTimeout(resolve, 50));
        } finally {
          await vault.close();
        }
      } finally {
        await to.close();
      }
      stopping = true;
      await load;

      expect(failures).toEqual([]);
      expect(result).toEqual({ rewrapped: before.length, remaining: 0 });
      expect(progress.at(0)).toEqual({ done: 0, total: before.length });
      expect(progress.at(-1)).toEqual({ done: before.length, total: before.length });
      const after = await keyRows(database);
      expect(after.length).toBeGreaterThan(before.length);
      for (const row of after) {
        expect(row.master_key_version).toBe(to.keyVersion);
        expect(Buffer.from(row.wrapped_key, "base64")[0]).toBe(0x50);
      }
      const store = database.open();
      try {
        const audited = await store.db
          .selectFrom("audit_log")
          .select(["tenant_id", "details"])
          .where("action", "=", "tenant.rotate_master_key")
          .execute();
        expect(audited).toHaveLength(3);
        expect(JSON.parse(audited[0]!.details!)).toMatchObject({ to: to.keyVersion, keys: 5 });
      } finally {
        await store.close();
      }

      // The old key removed: instances with the token alone read every token, old and new.
      for (const server of started.splice(0)) await server.close();
      const without = await startTestServer(pkcs11Env, { sharing });
      started.push(without);
      for (const token of made) {
        const read = await without.request("GET", `/tokens/${token.id}`, { key: token.key });
        expect(read.status, read.text).toBe(200);
        expect(read.body.data).toBe(token.data);
      }
      // And the raw key alone can no longer start on this store.
      await expect(startTestServer({}, { sharing })).rejects.toThrow(/cannot unwrap this store's keys/);
    });
  },
);
