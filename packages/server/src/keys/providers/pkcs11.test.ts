import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  SOFTHSM_MISSING,
  SOFTHSM_REQUIRED,
  createSoftHsm,
  tryToExtract,
  type SoftHsm,
} from "../../../test/softhsm.js";
import { DecryptionError } from "../../crypto/cipher.js";
import { openPkcs11Provider } from "./pkcs11.js";
import type { Pkcs11Settings } from "./settings.js";
import { MasterKeyProviderError, type MasterKeyProvider } from "./provider.js";

/** CKM_AES_CBC_PAD (PKCS#11 2.40, 0x1085): a mechanism to allow a key instead of AES-GCM. */
const CKM_AES_CBC_PAD = 0x1085;

describe.runIf(SOFTHSM_MISSING !== undefined && SOFTHSM_REQUIRED)("SoftHSM2 in CI", () => {
  it("is installed (CI=true: the PKCS#11 provider must be tested)", () => {
    throw new Error(SOFTHSM_MISSING);
  });
});

describe.skipIf(SOFTHSM_MISSING !== undefined)(
  `the pkcs11 provider against SoftHSM2${SOFTHSM_MISSING === undefined ? "" : ` (skipped: ${SOFTHSM_MISSING})`}`,
  () => {
    let hsm: SoftHsm;
    let slot: bigint;
    let settings: Pkcs11Settings;
    const opened: MasterKeyProvider[] = [];
    const open = async (changes: Partial<Pkcs11Settings> = {}) => {
      const provider = await openPkcs11Provider({ ...settings, ...changes });
      opened.push(provider);
      return provider;
    };
    const failureOf = async (changes: Partial<Pkcs11Settings>) => {
      const error = await openPkcs11Provider({ ...settings, ...changes }).then(
        (provider) => {
          opened.push(provider);
          throw new Error("opened");
        },
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(MasterKeyProviderError);
      return error as MasterKeyProviderError;
    };

    beforeAll(() => {
      hsm = createSoftHsm();
      slot = hsm.addToken("tessera", [
        { label: "tessera-master", id: Buffer.from("0102", "hex") },
        { label: "twin" },
        { label: "twin" },
        { label: "extractable", extractable: true },
        { label: "aes-128", bytes: 16 },
        { label: "decrypt-only", encrypt: false },
        { label: "cbc-only", allowedMechanisms: [CKM_AES_CBC_PAD] },
      ]);
      hsm.addToken("other", [{ label: "tessera-master" }]);
      settings = {
        module: hsm.module,
        token: { label: "tessera" },
        pinFile: hsm.pinFile,
        keyLabel: "tessera-master",
        gcmIv: "random",
      };
    });

    afterAll(async () => {
      for (const provider of opened) await provider.close();
      hsm?.remove();
    });

    it("wraps inside the token with AES-GCM, bound to the context, and names the key it used", async () => {
      const provider = await open();
      expect(provider.name).toBe("pkcs11");
      expect(provider.keyVersion).toBe("pkcs11:tessera/tessera-master#0102");
      expect(provider.details).toMatchObject({
        module: hsm.module,
        token: "tessera",
        key_label: "tessera-master",
        mechanism: "CKM_AES_GCM",
      });
      const key = randomBytes(32);
      const wrapped = await provider.wrap(key, "tenant-a:data:1");
      // `P`, the 12-byte IV, the 32-byte ciphertext and the 16-byte tag: no copy of the key in the clear.
      expect(wrapped).toHaveLength(1 + 12 + 32 + 16);
      expect(wrapped[0]).toBe(0x50);
      expect(wrapped.includes(key)).toBe(false);
      expect((await provider.unwrap(wrapped, "tenant-a:data:1")).equals(key)).toBe(true);
      // A fresh IV each time: the same key wraps differently.
      expect((await provider.wrap(key, "tenant-a:data:1")).equals(wrapped)).toBe(false);

      // Another context, or a changed byte, does not open: the token refuses (SoftHSM2 says CKR_GENERAL_ERROR,
      // which the custody layer tells from an outage with its probe).
      await expect(provider.unwrap(wrapped, "tenant-b:data:1")).rejects.toThrow();
      const flipped = Buffer.from(wrapped);
      flipped[20]! ^= 1;
      await expect(provider.unwrap(flipped, "tenant-a:data:1")).rejects.toThrow();
      // Not a PKCS#11 wrapping at all (a raw key's format): refused before the token is asked.
      await expect(provider.unwrap(Buffer.concat([Buffer.of(1), wrapped.subarray(1)]), "x")).rejects.toThrow(
        DecryptionError,
      );
    });

    it("cannot be read out of the token, even by someone with the PIN", async () => {
      for (const provider of opened.splice(0)) await provider.close();
      expect(tryToExtract(hsm, slot, "tessera-master")).toMatch(/^CKR_ATTRIBUTE_SENSITIVE$/);
      // The same question for a key made extractable answers: the check below is not vacuous.
      expect(tryToExtract(hsm, slot, "extractable")).toBe("extracted");
    });

    it("finds the token by slot id too, and another token's key of the same label is another key", async () => {
      const bySlot = await open({ token: { slot } });
      const byLabel = await open();
      const wrapped = await byLabel.wrap(randomBytes(32), "c");
      expect(await bySlot.unwrap(wrapped, "c")).toHaveLength(32);
      const other = await open({ token: { label: "other" } });
      expect(other.keyVersion).toBe("pkcs11:other/tessera-master");
      await expect(other.unwrap(wrapped, "c")).rejects.toThrow();
    });

    it("never stores a wrapping whose IV the token was to make but did not", async () => {
      // SoftHSM2 takes the IV it is given: told to leave the IV to the token, the provider sees it untouched, which
      // would have been the same zero IV for every key.
      const provider = await open({ gcmIv: "token" });
      await expect(provider.wrap(randomBytes(32), "c")).rejects.toMatchObject({
        failure: "key",
        message: expect.stringContaining("did not write the IV it generated into the IV buffer"),
      });
    });

    it("runs many operations at once over its sessions", async () => {
      const provider = await open();
      const keys = Array.from({ length: 40 }, () => randomBytes(32));
      const wrapped = await Promise.all(keys.map((key, i) => provider.wrap(key, `t:${i}`)));
      const back = await Promise.all(wrapped.map((each, i) => provider.unwrap(each, `t:${i}`)));
      back.forEach((key, i) => expect(key.equals(keys[i]!)).toBe(true));
    });

    it("refuses, each for its own reason: module, token, PIN, key", async () => {
      expect(await failureOf({ module: path.join(hsm.dir, "missing.so") })).toMatchObject({
        failure: "module",
        message: expect.stringMatching(/^cannot load the PKCS#11 module .*missing\.so: .*No such file/),
      });
      const notALibrary = path.join(hsm.dir, "not-a-library.so");
      writeFileSync(notALibrary, "not an ELF file");
      expect((await failureOf({ module: notALibrary })).failure).toBe("module");

      expect(await failureOf({ token: { label: "nope" } })).toMatchObject({
        failure: "token",
        message: expect.stringMatching(
          /has no token labelled "nope" \(tokens: "[a-z]+" \(slot 0x[0-9a-f]+\), "[a-z]+" \(slot 0x[0-9a-f]+\)\)$/,
        ),
      });
      expect((await failureOf({ token: { slot: 424242n } })).failure).toBe("token");

      // The login belongs to the process, not a session: with the token already logged in (another provider of
      // this process open on it), a second C_Login answers CKR_USER_ALREADY_LOGGED_IN whatever the PIN.
      for (const provider of opened.splice(0)) await provider.close();
      const wrongPin = path.join(hsm.dir, "wrong-pin");
      writeFileSync(wrongPin, "0000\n");
      const login = await failureOf({ pinFile: wrongPin });
      expect(login).toMatchObject({
        failure: "login",
        message: expect.stringContaining("CKR_PIN_INCORRECT"),
      });
      expect(login.message).not.toContain("0000");

      expect(await failureOf({ keyLabel: "missing" })).toMatchObject({
        failure: "key",
        message:
          'token "tessera" of ' + hsm.module + ' holds no AES key labelled "missing" that this login can see',
      });
      expect((await failureOf({ keyLabel: "twin" })).message).toContain("more than one");
      expect((await failureOf({ keyLabel: "extractable" })).message).toContain(
        "must not leave the token (CKA_SENSITIVE true, CKA_EXTRACTABLE false)",
      );
      expect((await failureOf({ keyLabel: "aes-128" })).message).toContain(
        "must be AES-256 (CKA_VALUE_LEN 32, not 16)",
      );
      expect((await failureOf({ keyLabel: "decrypt-only" })).message).toContain(
        "must allow encrypt and decrypt",
      );
    });

    it("refuses a token without AES-GCM, and a key the token will not use for it", async () => {
      // As YubiHSM 2 is: no CKM_AES_GCM among the token's mechanisms (SoftHSM2 configured to offer only two).
      for (const provider of opened.splice(0)) await provider.close();
      const conf = path.join(hsm.dir, "no-gcm.conf");
      writeFileSync(
        conf,
        `${readFileSync(hsm.conf, "utf8")}slots.mechanisms = CKM_AES_KEY_GEN,CKM_AES_CBC_PAD\n`,
      );
      process.env.SOFTHSM2_CONF = conf;
      try {
        expect(await failureOf({})).toMatchObject({
          failure: "token",
          message: `token "tessera" of ${hsm.module} does not offer CKM_AES_GCM to encrypt and decrypt, which the pkcs11 provider needs: see docs/keys.md#vendors`,
        });
      } finally {
        process.env.SOFTHSM2_CONF = hsm.conf;
      }
      const provider = await open({ keyLabel: "cbc-only" });
      await expect(provider.wrap(randomBytes(32), "c")).rejects.toMatchObject({
        failure: "key",
        message: expect.stringMatching(/refuses CKM_AES_GCM with key "cbc-only" \(CKR_MECHANISM_INVALID\)/),
      });
    });

    it("opens its sessions again after they are lost (a token that restarted)", async () => {
      const provider = await open();
      const key = randomBytes(32);
      const wrapped = await provider.wrap(key, "c");
      // Every session of this process on the token closed behind the provider's back, as an HSM restart does.
      const { default: p11 } = await import("pkcs11js");
      const lib = new p11.PKCS11();
      lib.load(hsm.module);
      try {
        lib.C_Initialize();
      } catch (error) {
        expect((error as Error).message).toBe("CKR_CRYPTOKI_ALREADY_INITIALIZED");
      }
      lib.C_CloseAllSessions(lib.C_GetSlotList(true).find((each) => each.readBigUInt64LE(0) === slot)!);
      const lost = await provider.unwrap(wrapped, "c").then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(lost).toMatchObject({
        failure: "unavailable",
        message: expect.stringContaining("CKR_SESSION_HANDLE_INVALID"),
      });
      expect((await provider.unwrap(wrapped, "c")).equals(key)).toBe(true);

      // Again, with more operations under way than the provider has sessions: every one of them ends (those on a
      // lost session with an error), none waits for a session that will never come back.
      lib.C_CloseAllSessions(lib.C_GetSlotList(true).find((each) => each.readBigUInt64LE(0) === slot)!);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 12 }, () => provider.unwrap(wrapped, "c")),
      );
      expect(outcomes.some((outcome) => outcome.status === "rejected")).toBe(true);
      expect((await provider.unwrap(wrapped, "c")).equals(key)).toBe(true);
    });
  },
);
