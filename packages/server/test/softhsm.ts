import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import type * as Pkcs11Module from "pkcs11js";

/** Where Debian's softhsm2 package (and a source build) put the module. */
const MODULE_PATHS = [
  "/usr/lib/softhsm/libsofthsm2.so",
  "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so",
  "/usr/lib/aarch64-linux-gnu/softhsm/libsofthsm2.so",
  "/usr/local/lib/softhsm/libsofthsm2.so",
];

export const SOFTHSM_MODULE = MODULE_PATHS.find((file) => existsSync(file));

function loadPkcs11js(): typeof Pkcs11Module | undefined {
  try {
    return createRequire(import.meta.url)("pkcs11js") as typeof Pkcs11Module;
  } catch {
    return undefined;
  }
}

const pkcs11js = loadPkcs11js();

/**
 * Why the SoftHSM2 tests cannot run here, or undefined when they can. They skip with this reason, except in CI
 * (CI=true), where `.ci/run` installs softhsm2 and a missing one is a failure (softHsmRequired).
 */
export const SOFTHSM_MISSING: string | undefined =
  SOFTHSM_MODULE === undefined
    ? `SoftHSM2 is not installed (no libsofthsm2.so in ${MODULE_PATHS.join(", ")}; Debian: apt-get install softhsm2)`
    : pkcs11js === undefined
      ? "the pkcs11js package is not built (npm install needs python3, make and a C++ compiler for it)"
      : undefined;

/** True when the SoftHSM2 tests must run: in CI, a missing SoftHSM2 fails instead of skipping. */
export const SOFTHSM_REQUIRED = process.env.CI === "true";

export const SO_PIN = "so-pin-1234";
export const USER_PIN = "user-pin-5678";

export interface KeySpec {
  readonly label: string;
  /** Defaults make a key the provider accepts: 32 bytes, sensitive, not extractable, encrypt and decrypt. */
  readonly bytes?: number;
  readonly extractable?: boolean;
  readonly encrypt?: boolean;
  readonly id?: Buffer;
  /** CKA_ALLOWED_MECHANISMS: the only mechanisms the token lets the key take part in. */
  readonly allowedMechanisms?: readonly number[];
}

export interface SoftHsm {
  /** The directory holding the configuration and the tokens. */
  readonly dir: string;
  /** SOFTHSM2_CONF for this directory: set in this process, and to pass to child processes. */
  readonly conf: string;
  readonly module: string;
  /** A file holding USER_PIN. */
  readonly pinFile: string;
  /** Initializes a token with USER_PIN and makes its keys; answers its slot id. */
  addToken(label: string, keys: readonly KeySpec[]): bigint;
  remove(): void;
}

/**
 * A SoftHSM2 of its own in a temporary directory: its own SOFTHSM2_CONF (set in this process's environment, which
 * SoftHSM reads at C_Initialize), its own tokens. Tokens are made through the module itself (C_InitToken,
 * C_InitPIN, C_GenerateKey), as an operator's tool would, and the module is finalized again before the code under
 * test loads it.
 */
export function createSoftHsm(): SoftHsm {
  if (SOFTHSM_MODULE === undefined || pkcs11js === undefined) throw new Error(SOFTHSM_MISSING);
  const module = SOFTHSM_MODULE;
  const p11 = pkcs11js;
  const dir = mkdtempSync(path.join(tmpdir(), "tessera-softhsm-"));
  const tokens = path.join(dir, "tokens");
  mkdirSync(tokens);
  const conf = path.join(dir, "softhsm2.conf");
  writeFileSync(
    conf,
    `directories.tokendir = ${tokens}\nobjectstore.backend = file\nlog.level = ERROR\nslots.removable = false\n`,
  );
  const pinFile = path.join(dir, "pin");
  writeFileSync(pinFile, `${USER_PIN}\n`, { mode: 0o600 });
  process.env.SOFTHSM2_CONF = conf;

  /** A token's slot id, read after a fresh C_Initialize: SoftHSM numbers an initialized token's slot then. */
  const slotOf = (label: string): bigint => {
    const lib = new p11.PKCS11();
    lib.load(module);
    lib.C_Initialize();
    try {
      const slot = lib
        .C_GetSlotList(true)
        .find((each) => lib.C_GetTokenInfo(each).label.replace(/[\s\0]+$/, "") === label);
      if (slot === undefined) throw new Error(`no token ${label}`);
      return slot.readBigUInt64LE(0);
    } finally {
      lib.C_Finalize();
      lib.close();
    }
  };

  return {
    dir,
    conf,
    module,
    pinFile,
    addToken(label, keys) {
      const lib = new p11.PKCS11();
      lib.load(module);
      lib.C_Initialize();
      try {
        // The one slot without a token: SoftHSM always keeps one free.
        const free = lib.C_GetSlotList(false).find((slot) => !lib.C_GetTokenInfo(slot).label.trim());
        if (free === undefined) throw new Error("SoftHSM has no free slot");
        lib.C_InitToken(free, SO_PIN, label.padEnd(32));
        const slot = lib
          .C_GetSlotList(true)
          .find((each) => lib.C_GetTokenInfo(each).label.replace(/[\s\0]+$/, "") === label)!;
        const session = lib.C_OpenSession(slot, p11.CKF_SERIAL_SESSION | p11.CKF_RW_SESSION);
        lib.C_Login(session, p11.CKU_SO, SO_PIN);
        lib.C_InitPIN(session, USER_PIN);
        lib.C_Logout(session);
        lib.C_Login(session, p11.CKU_USER, USER_PIN);
        for (const key of keys) {
          lib.C_GenerateKey(session, { mechanism: p11.CKM_AES_KEY_GEN }, [
            { type: p11.CKA_CLASS, value: p11.CKO_SECRET_KEY },
            { type: p11.CKA_KEY_TYPE, value: p11.CKK_AES },
            { type: p11.CKA_TOKEN, value: true },
            { type: p11.CKA_LABEL, value: key.label },
            { type: p11.CKA_ID, value: key.id ?? Buffer.alloc(0) },
            { type: p11.CKA_VALUE_LEN, value: key.bytes ?? 32 },
            { type: p11.CKA_ENCRYPT, value: key.encrypt ?? true },
            { type: p11.CKA_DECRYPT, value: true },
            { type: p11.CKA_SENSITIVE, value: !(key.extractable ?? false) },
            { type: p11.CKA_EXTRACTABLE, value: key.extractable ?? false },
            ...(key.allowedMechanisms === undefined
              ? []
              : [{ type: p11.CKA_ALLOWED_MECHANISMS, value: ulongs(key.allowedMechanisms) }]),
          ]);
        }
        lib.C_CloseSession(session);
      } finally {
        lib.C_Finalize();
        lib.close();
      }
      return slotOf(label);
    },
    remove() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** CK_ULONGs as the module reads them: 8 bytes each, little-endian (x86-64, arm64). */
function ulongs(values: readonly number[]): Buffer {
  const buffer = Buffer.alloc(8 * values.length);
  values.forEach((value, i) => buffer.writeBigUInt64LE(BigInt(value), 8 * i));
  return buffer;
}

/**
 * Reads a key's CKA_VALUE through the module, as anyone holding the PIN could try: for a key the provider accepts,
 * the token must refuse. Run while no provider has the module open (it finalizes the module).
 */
export function tryToExtract(hsm: SoftHsm, slotId: bigint, keyLabel: string): string {
  const p11 = pkcs11js!;
  const lib = new p11.PKCS11();
  lib.load(hsm.module);
  lib.C_Initialize();
  try {
    const slot = lib.C_GetSlotList(true).find((each) => each.readBigUInt64LE(0) === slotId)!;
    const session = lib.C_OpenSession(slot, p11.CKF_SERIAL_SESSION);
    lib.C_Login(session, p11.CKU_USER, USER_PIN);
    lib.C_FindObjectsInit(session, [{ type: p11.CKA_LABEL, value: keyLabel }]);
    const [key] = lib.C_FindObjects(session, 1);
    lib.C_FindObjectsFinal(session);
    try {
      lib.C_GetAttributeValue(session, key!, [{ type: p11.CKA_VALUE }]);
      return "extracted";
    } catch (error) {
      return (error as Error).message;
    }
  } finally {
    lib.C_Finalize();
    lib.close();
  }
}
