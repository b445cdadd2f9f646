import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  STORE,
  STORE_UNAVAILABLE,
  createTestDatabase,
  type TestDatabase,
} from "../../server/test/harness.js";
import { createFakeKms, type FakeKms } from "../../server/test/kms.js";
import { SOFTHSM_MISSING, createSoftHsm, type SoftHsm } from "../../server/test/softhsm.js";
import { killAll, run } from "./run-cli.js";

/**
 * A master key that cannot be used stops the start with one line and an exit code per reason (docs/keys.md#start-up-checks):
 * 80 module, 81 token, 82 PIN, 83 key, 84 not this store's key, 69 a provider that does not answer, 78 configuration.
 */
describe.skipIf(STORE_UNAVAILABLE || SOFTHSM_MISSING !== undefined)(
  `the tessera command with its master key in a PKCS#11 token (${STORE})${SOFTHSM_MISSING === undefined ? "" : ` (skipped: ${SOFTHSM_MISSING})`}`,
  () => {
    let hsm: SoftHsm;
    let database: TestDatabase;
    let pkcs11: Record<string, string>;

    beforeAll(async () => {
      hsm = createSoftHsm();
      hsm.addToken("tessera", [{ label: "tessera-master" }]);
      hsm.addToken("spare", [{ label: "tessera-master" }]);
      database = await createTestDatabase();
      pkcs11 = {
        ...database.env,
        SOFTHSM2_CONF: hsm.conf,
        TESSERA_MASTER_KEY_PROVIDER: "pkcs11",
        TESSERA_PKCS11_MODULE: hsm.module,
        TESSERA_PKCS11_TOKEN_LABEL: "tessera",
        TESSERA_PKCS11_PIN_FILE: hsm.pinFile,
        TESSERA_PKCS11_KEY_LABEL: "tessera-master",
      };
    });
    afterEach(killAll);
    afterAll(async () => {
      killAll();
      await database?.drop();
      hsm?.remove();
    });

    it("starts, naming the provider and the key version in one log line", async () => {
      const init = await run(["init"], { ...pkcs11, TESSERA_LOG_LEVEL: "info" }, database.dataDir);
      expect(init.stderr).toContain("created the bootstrap tenant");
      expect(init.code).toBe(0);
      const logged = init.stdout
        .split("\n")
        .filter((line) => line.includes('"msg":"master key:'))
        .map((line) => JSON.parse(line));
      expect(logged).toEqual([
        expect.objectContaining({
          msg: "master key: pkcs11 provider, key version pkcs11:tessera/tessera-master",
          provider: "pkcs11",
          key_version: "pkcs11:tessera/tessera-master",
          module: hsm.module,
          token: "tessera",
          key_label: "tessera-master",
        }),
      ]);
      expect(init.stdout + init.stderr).not.toContain("user-pin");
    });

    it("stops with one line and the exit code of each reason", { timeout: 180_000 }, async () => {
      const wrongPin = path.join(hsm.dir, "wrong-pin");
      writeFileSync(wrongPin, "0000\n");
      const start = (changes: Record<string, string>) =>
        run(["migrate"], { ...pkcs11, ...changes }, database.dataDir);
      // One at a time: a login with a wrong PIN rewrites the token's file, and SoftHSM2 processes reading the same
      // token directory meanwhile can fail to list its tokens (CKR_GENERAL_ERROR), which is not what this tests.
      const module = await start({ TESSERA_PKCS11_MODULE: path.join(hsm.dir, "libvendor.so") });
      const token = await start({ TESSERA_PKCS11_TOKEN_LABEL: "tesera" });
      const pin = await start({ TESSERA_PKCS11_PIN_FILE: wrongPin });
      const label = await start({ TESSERA_PKCS11_KEY_LABEL: "tessera-master-2" });
      // Another token holds another key of the same label: not the key that wrapped this store's keys.
      const otherKey = await start({ TESSERA_PKCS11_TOKEN_LABEL: "spare" });
      const pinFile = await start({ TESSERA_PKCS11_PIN_FILE: path.join(hsm.dir, "no-pin-file") });
      const oneLine = (result: { stderr: string }) => {
        expect(result.stderr.split("\n").filter((line) => line !== "")).toHaveLength(1);
        expect(result.stderr).toMatch(/^tessera: /);
        expect(result.stderr).not.toMatch(/\n\s+at /);
        expect(result.stderr).not.toContain("user-pin");
      };
      expect(module.stderr).toMatch(
        /^tessera: cannot load the PKCS#11 module .*libvendor\.so: .*No such file/,
      );
      expect(module.code).toBe(80);
      oneLine(module);
      expect(token.stderr).toMatch(/^tessera: .*libsofthsm2\.so has no token labelled "tesera" \(tokens: /);
      expect(token.code).toBe(81);
      oneLine(token);
      expect(pin.stderr).toBe(
        `tessera: token "tessera" of ${hsm.module} refused the PIN (CKR_PIN_INCORRECT)\n`,
      );
      expect(pin.code).toBe(82);
      expect(label.stderr).toBe(
        `tessera: token "tessera" of ${hsm.module} holds no AES key labelled "tessera-master-2" that this login can see\n`,
      );
      expect(label.code).toBe(83);
      expect(otherKey.stderr).toBe(
        "tessera: the configured master key cannot unwrap this store's keys: it is not the key the store was " +
          "created with (they are recorded as wrapped by master key pkcs11:tessera/tessera-master: configure " +
          "that key, or during a rotation give it as TESSERA_MASTER_KEY_PREVIOUS_FILE until `tessera keys " +
          "rotate-master` has re-wrapped them, docs/keys.md#rotating-the-master-key)\n",
      );
      expect(otherKey.code).toBe(84);
      expect(pinFile.stderr).toMatch(
        /^tessera: invalid configuration:\n {2}- cannot read TESSERA_PKCS11_PIN_FILE .*no-pin-file: ENOENT\n$/,
      );
      expect(pinFile.code).toBe(78);
    });
  },
);

describe.skipIf(STORE_UNAVAILABLE)(`the tessera command with its master key in a KMS (${STORE})`, () => {
  let kms: FakeKms;
  let database: TestDatabase;

  beforeAll(async () => {
    kms = createFakeKms({ timeoutMs: 1_000 });
    database = await createTestDatabase();
  });
  afterEach(killAll);
  afterAll(async () => {
    killAll();
    for (const pid of kms?.pids() ?? []) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    await database?.drop();
    kms?.remove();
  });

  it(
    "stops with 69 while the KMS does not answer, 80 for a missing program, 84 for a store of another key",
    {
      timeout: 180_000,
    },
    async () => {
      const env = { ...database.env, ...kms.env };
      // A store made under a raw master key.
      const raw = { ...database.env, TESSERA_MASTER_KEY: randomBytes(32).toString("base64") };
      expect((await run(["init"], raw, database.dataDir)).code).toBe(0);

      kms.setMode("fail");
      const failing = await run(["migrate"], env, database.dataDir);
      kms.setMode("hang");
      const hanging = await run(["migrate"], env, database.dataDir);
      kms.setMode("ok");
      const missing = path.join(database.dataDir, "no-such-kms");
      const [program, otherStore] = await Promise.all([
        run(["migrate"], { ...env, TESSERA_KMS_WRAP_COMMAND: JSON.stringify([missing]) }, database.dataDir),
        run(["migrate"], env, database.dataDir),
      ]);

      expect(failing.stderr).toMatch(
        /^tessera: the command master key \(command:fake-kms\/tessera\) cannot wrap a test key: the wrap command \(.+\) exited with code 7: An error occurred \(AccessDeniedException\) when calling the encrypt operation: key \[redacted\] plaintext \[redacted\]\n$/,
      );
      expect(failing.code).toBe(69);
      expect(hanging.stderr).toMatch(/^tessera: the wrap command \(.+\) did not finish within 1000 ms\n$/);
      expect(hanging.code).toBe(69);
      expect(program.stderr).toBe(`tessera: the wrap command (${missing}) cannot be started (ENOENT)\n`);
      expect(program.code).toBe(80);
      expect(otherStore.stderr).toMatch(
        /^tessera: the configured master key cannot unwrap this store's keys: it is not the key the store was created with \(they are recorded as wrapped by master key raw:[0-9a-f]{16}: configure that key, or during a rotation give it as TESSERA_MASTER_KEY_PREVIOUS_FILE until `tessera keys rotate-master` has re-wrapped them, docs\/keys.md#rotating-the-master-key\)\n$/,
      );
      expect(otherStore.code).toBe(84);
    },
  );
});
