import { readFileSync } from "node:fs";
import type * as Pkcs11Module from "pkcs11js";
import type { PKCS11 } from "pkcs11js";
import { ConfigError } from "../../shared/config-error.js";
import type { Pkcs11Settings } from "./settings.js";
import { MasterKeyProviderError } from "./provider.js";

/*
 * The PKCS#11 token as the pkcs11 provider (pkcs11.ts) finds and checks it: the binding and the module, loaded once
 * per process; the token by label or slot; the login; the key and its attributes; what a return value means.
 */

export type Pkcs11js = typeof Pkcs11Module;

const PIN_REFUSED = new Set([
  "CKR_PIN_INCORRECT",
  "CKR_PIN_INVALID",
  "CKR_PIN_LEN_RANGE",
  "CKR_PIN_LOCKED",
  "CKR_PIN_EXPIRED",
]);

/**
 * One library loaded and initialized per process however many providers use it: C_Initialize twice fails, and
 * C_Finalize ends every session of the process, so the last provider to close finalizes.
 */
const loaded = new Map<string, { readonly lib: PKCS11; users: number }>();

export interface Connection {
  readonly session: Buffer;
  readonly key: Buffer;
  readonly keyVersion: string;
  broken: boolean;
}

/** A session, logged in, and the key's handle: at start, and again after an outage. */
export function openConnection(
  pkcs11: Pkcs11js,
  lib: PKCS11,
  token: { readonly slot: Buffer; readonly tokenLabel: string; readonly where: string },
  pin: string,
  keyLabel: string,
): Connection {
  const { slot, tokenLabel, where } = token;
  let session: Buffer;
  try {
    session = lib.C_OpenSession(slot, pkcs11.CKF_SERIAL_SESSION);
  } catch (error) {
    throw failure(error, `cannot open a session on ${where}`);
  }
  try {
    login(pkcs11, lib, session, pin, where);
    const { key, id } = findKey(pkcs11, lib, session, keyLabel, where);
    const keyVersion = `pkcs11:${tokenLabel}/${keyLabel}${id.length > 0 ? `#${id.toString("hex")}` : ""}`;
    return { session, key, keyVersion, broken: false };
  } catch (error) {
    closeQuietly(lib, session);
    throw error;
  }
}

function login(pkcs11: Pkcs11js, lib: PKCS11, session: Buffer, pin: string, where: string): void {
  try {
    lib.C_Login(session, pkcs11.CKU_USER, pin);
  } catch (error) {
    const code = returnValue(error);
    // The login state belongs to the application, not the session: another provider or session logged in first.
    if (code === "CKR_USER_ALREADY_LOGGED_IN") return;
    if (code !== undefined && PIN_REFUSED.has(code)) {
      throw new MasterKeyProviderError("login", `${where} refused the PIN (${code})`);
    }
    throw failure(error, `cannot log in to ${where}`);
  }
}

/**
 * The one AES key with that label. It must be able to encrypt and decrypt, be sensitive and not extractable (so
 * that the token never lets it out), and be 256 bits.
 */
function findKey(
  pkcs11: Pkcs11js,
  lib: PKCS11,
  session: Buffer,
  label: string,
  where: string,
): { key: Buffer; id: Buffer } {
  let found: Buffer[];
  try {
    lib.C_FindObjectsInit(session, [
      { type: pkcs11.CKA_CLASS, value: pkcs11.CKO_SECRET_KEY },
      { type: pkcs11.CKA_KEY_TYPE, value: pkcs11.CKK_AES },
      { type: pkcs11.CKA_LABEL, value: label },
    ]);
    found = lib.C_FindObjects(session, 2);
    lib.C_FindObjectsFinal(session);
  } catch (error) {
    throw failure(error, `cannot search ${where} for keys`);
  }
  const [key] = found;
  if (key === undefined) {
    throw new MasterKeyProviderError(
      "key",
      `${where} holds no AES key labelled "${label}" that this login can see`,
    );
  }
  if (found.length > 1) {
    throw new MasterKeyProviderError("key", `${where} holds more than one AES key labelled "${label}"`);
  }
  const attributes = [
    pkcs11.CKA_ENCRYPT,
    pkcs11.CKA_DECRYPT,
    pkcs11.CKA_SENSITIVE,
    pkcs11.CKA_EXTRACTABLE,
    pkcs11.CKA_VALUE_LEN,
    pkcs11.CKA_ID,
  ];
  let values: Buffer[];
  try {
    values = lib
      .C_GetAttributeValue(
        session,
        key,
        attributes.map((type) => ({ type })),
      )
      .map((attribute) => attribute.value);
  } catch (error) {
    throw failure(error, `cannot read the attributes of key "${label}" in ${where}`);
  }
  const [encrypt, decrypt, sensitive, extractable, length, id] = values as [
    Buffer,
    Buffer,
    Buffer,
    Buffer,
    Buffer,
    Buffer,
  ];
  const problems = [
    ...(flag(encrypt) && flag(decrypt)
      ? []
      : ["it must allow encrypt and decrypt (CKA_ENCRYPT, CKA_DECRYPT)"]),
    ...(flag(sensitive) && !flag(extractable)
      ? []
      : ["it must not leave the token (CKA_SENSITIVE true, CKA_EXTRACTABLE false)"]),
    ...(unsigned(length) === 32n ? [] : [`it must be AES-256 (CKA_VALUE_LEN 32, not ${unsigned(length)})`]),
  ];
  if (problems.length > 0) {
    throw new MasterKeyProviderError(
      "key",
      `key "${label}" in ${where} cannot be used: ${problems.join("; ")}`,
    );
  }
  return { key, id };
}

export function findSlot(lib: PKCS11, settings: Pkcs11Settings): { slot: Buffer; tokenLabel: string } {
  let tokens: { slot: Buffer; label: string }[];
  try {
    tokens = lib.C_GetSlotList(true).map((slot) => ({ slot, label: padded(lib.C_GetTokenInfo(slot).label) }));
  } catch (error) {
    throw failure(error, `cannot list the tokens of ${settings.module}`);
  }
  const present = tokens
    .filter((t) => t.label !== "")
    .map((t) => `"${t.label}" (slot 0x${slotNumber(t.slot).toString(16)})`)
    .join(", ");
  const { token } = settings;
  const matches =
    "label" in token
      ? tokens.filter((t) => t.label === token.label)
      : tokens.filter((t) => slotNumber(t.slot) === token.slot);
  const wanted = "label" in token ? `labelled "${token.label}"` : `in slot ${token.slot}`;
  if (matches.length === 0) {
    throw new MasterKeyProviderError(
      "token",
      `${settings.module} has no token ${wanted} (tokens: ${present || "none"})`,
    );
  }
  if (matches.length > 1) {
    throw new MasterKeyProviderError(
      "token",
      `${settings.module} has more than one token ${wanted}: set TESSERA_PKCS11_SLOT`,
    );
  }
  return { slot: matches[0]!.slot, tokenLabel: matches[0]!.label };
}

/** AES-GCM encryption and decryption inside the token: what the provider needs (YubiHSM 2, for one, lacks it). */
export function requireGcm(pkcs11: Pkcs11js, lib: PKCS11, slot: Buffer, where: string): void {
  let flags = 0;
  try {
    // The list first: a module may still describe a mechanism its token is configured not to offer (SoftHSM2).
    if (lib.C_GetMechanismList(slot).includes(pkcs11.CKM_AES_GCM)) {
      flags = lib.C_GetMechanismInfo(slot, pkcs11.CKM_AES_GCM).flags;
    }
  } catch (error) {
    throw failure(error, `cannot read the mechanisms of ${where}`);
  }
  if ((flags & pkcs11.CKF_ENCRYPT) === 0 || (flags & pkcs11.CKF_DECRYPT) === 0) {
    throw new MasterKeyProviderError(
      "token",
      `${where} does not offer CKM_AES_GCM to encrypt and decrypt, which the pkcs11 provider needs: see ` +
        "docs/keys.md#vendors",
    );
  }
}

export async function loadBinding(): Promise<Pkcs11js> {
  try {
    return (await import("pkcs11js")).default;
  } catch (error) {
    throw new MasterKeyProviderError(
      "module",
      "the pkcs11 provider needs the pkcs11js package, which is not installed or not built: it compiles at " +
        "`npm install` (python3, make and a C++ compiler), see docs/keys.md#installing-pkcs11js",
      { cause: error },
    );
  }
}

export function acquireLibrary(pkcs11: Pkcs11js, module: string): PKCS11 {
  const existing = loaded.get(module);
  if (existing !== undefined) {
    existing.users += 1;
    return existing.lib;
  }
  const lib = new pkcs11.PKCS11();
  try {
    lib.load(module);
  } catch (error) {
    throw new MasterKeyProviderError(
      "module",
      `cannot load the PKCS#11 module ${module}: ${firstLine(error)}`,
      { cause: error },
    );
  }
  try {
    // Operations run on libuv's worker threads (C_EncryptAsync), several at once: the library must lock.
    lib.C_Initialize({ flags: pkcs11.CKF_OS_LOCKING_OK });
  } catch (error) {
    if (returnValue(error) !== "CKR_CRYPTOKI_ALREADY_INITIALIZED") {
      lib.close();
      throw new MasterKeyProviderError(
        "module",
        `the PKCS#11 module ${module} failed to initialize (${returnValue(error) ?? firstLine(error)}): check its ` +
          "own configuration (SOFTHSM2_CONF, the vendor's client configuration)",
        { cause: error },
      );
    }
  }
  loaded.set(module, { lib, users: 1 });
  return lib;
}

export function releaseLibrary(module: string): void {
  const entry = loaded.get(module);
  if (entry === undefined) return;
  entry.users -= 1;
  if (entry.users > 0) return;
  loaded.delete(module);
  try {
    entry.lib.C_Finalize();
  } finally {
    entry.lib.close();
  }
}

export function readPin(file: string): string {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new ConfigError([
      `cannot read TESSERA_PKCS11_PIN_FILE ${file}: ${(error as NodeJS.ErrnoException).code ?? "unreadable"}`,
    ]);
  }
  const pin = text.replace(/\r?\n$/, "");
  if (pin === "") throw new ConfigError([`TESSERA_PKCS11_PIN_FILE ${file} is empty`]);
  return pin;
}

/** `CKR_…` of a pkcs11js error, or undefined for an error that is not a PKCS#11 return value. */
export function returnValue(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : "";
  return /^CKR_[A-Z0-9_]+$/.test(message) ? message : undefined;
}

/** A failure of the token or the connection: `unavailable`, with the return value for the operator. */
export function failure(error: unknown, what: string): MasterKeyProviderError {
  return new MasterKeyProviderError("unavailable", `${what} (${returnValue(error) ?? firstLine(error)})`, {
    cause: error,
  });
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n", 1)[0]!.slice(0, 200);
}

export function closeQuietly(lib: PKCS11, session: Buffer): void {
  try {
    lib.C_CloseSession(session);
  } catch {
    // A session of a token that went away is already gone.
  }
}

/** PKCS#11 pads labels to 32 bytes with spaces (some modules with NULs). */
function padded(label: string): string {
  return label.replace(/[\s\0]+$/, "");
}

function flag(value: Buffer): boolean {
  return value.length > 0 && value[0] !== 0;
}

/** A CK_ULONG attribute or handle, in the platform's byte order (little-endian on x86-64 and arm64). */
function unsigned(value: Buffer): bigint {
  let result = 0n;
  for (let i = value.length - 1; i >= 0; i--) result = (result << 8n) | BigInt(value[i]!);
  return result;
}

export function slotNumber(slot: Buffer): bigint {
  return unsigned(slot);
}
