import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type * as Pkcs11Module from "pkcs11js";
import type { PKCS11 } from "pkcs11js";
import { ConfigError } from "../../config.js";
import { DecryptionError } from "../../crypto/cipher.js";
import { MasterKeyProviderError, type MasterKeyProvider } from "./provider.js";

type Pkcs11js = typeof Pkcs11Module;

export interface Pkcs11Settings {
  /** The vendor's PKCS#11 library (SoftHSM2, CloudHSM, Luna, YubiHSM, a cloud HSM's client). */
  readonly module: string;
  /** The token, by its label or by its slot id. */
  readonly token: { readonly label: string } | { readonly slot: bigint };
  /** Holds the user PIN (one trailing newline is dropped). */
  readonly pinFile: string;
  /** CKA_LABEL of the AES-256 key that wraps the tenant keys. */
  readonly keyLabel: string;
  /**
   * Who makes each wrapping's GCM IV: `random`, Tessera (96 random bits), or `token`, the token itself, which
   * writes it into the IV buffer (AWS CloudHSM requires this, and refuses an IV it is given).
   */
  readonly gcmIv: "random" | "token";
}

/** `P`, the IV the token used, then the ciphertext and the 16-byte GCM tag of the 32-byte tenant key. */
const FORMAT = 0x50;
const IV_BYTES = 12;
const TAG_BYTES = 16;
/** Operations in flight at once, each on a session of its own (a PKCS#11 session runs one operation at a time). */
const MAX_SESSIONS = 4;

/** Return values that say the token or the connection to it went away, not that the input was wrong. */
const OUTAGES = new Set([
  "CKR_DEVICE_ERROR",
  "CKR_DEVICE_MEMORY",
  "CKR_DEVICE_REMOVED",
  "CKR_TOKEN_NOT_PRESENT",
  "CKR_TOKEN_NOT_RECOGNIZED",
  "CKR_SESSION_CLOSED",
  "CKR_SESSION_HANDLE_INVALID",
  "CKR_SESSION_COUNT",
  "CKR_USER_NOT_LOGGED_IN",
  "CKR_CRYPTOKI_NOT_INITIALIZED",
  "CKR_KEY_HANDLE_INVALID",
  "CKR_OBJECT_HANDLE_INVALID",
  "CKR_SLOT_ID_INVALID",
]);
const PIN_REFUSED = new Set([
  "CKR_PIN_INCORRECT",
  "CKR_PIN_INVALID",
  "CKR_PIN_LEN_RANGE",
  "CKR_PIN_LOCKED",
  "CKR_PIN_EXPIRED",
]);
/** A ciphertext the token refuses to open: the tag does not match (wrong key, wrong context, changed bytes). */
const NOT_AUTHENTIC = new Set(["CKR_ENCRYPTED_DATA_INVALID", "CKR_ENCRYPTED_DATA_LEN_RANGE"]);
/**
 * The token will not run AES-GCM with this key: a key whose CKA_ALLOWED_MECHANISMS leaves it out, or a module that
 * reads the GCM parameters in another layout than PKCS#11 2.40's.
 */
const MECHANISM_REFUSED = new Set([
  "CKR_MECHANISM_INVALID",
  "CKR_MECHANISM_PARAM_INVALID",
  "CKR_KEY_FUNCTION_NOT_PERMITTED",
  "CKR_KEY_TYPE_INCONSISTENT",
]);

/**
 * One library loaded and initialized per process however many providers use it: C_Initialize twice fails, and
 * C_Finalize ends every session of the process, so the last provider to close finalizes.
 */
const loaded = new Map<string, { readonly lib: PKCS11; users: number }>();

/**
 * The master key as a non-extractable AES-256 key inside a PKCS#11 token (docs/keys.md#pkcs11). Tenant keys are
 * wrapped and unwrapped by the token with CKM_AES_GCM, the context as AAD; the key never leaves the token.
 */
export async function openPkcs11Provider(settings: Pkcs11Settings): Promise<MasterKeyProvider> {
  const pin = readPin(settings.pinFile);
  const pkcs11 = await loadBinding();
  const lib = acquireLibrary(pkcs11, settings.module);
  try {
    return await connect(pkcs11, lib, settings, pin);
  } catch (error) {
    releaseLibrary(settings.module);
    throw error;
  }
}

async function connect(
  pkcs11: Pkcs11js,
  lib: PKCS11,
  settings: Pkcs11Settings,
  pin: string,
): Promise<MasterKeyProvider> {
  const { slot, tokenLabel } = findSlot(lib, settings);
  const where = `token "${tokenLabel}" of ${settings.module}`;
  requireGcm(pkcs11, lib, slot, where);
  const reconnect = () => openConnection(pkcs11, lib, { slot, tokenLabel, where }, pin, settings.keyLabel);
  let connection = reconnect();
  const idle: Buffer[] = [connection.session];
  let free = MAX_SESSIONS;
  const waiting: (() => void)[] = [];
  let closed = false;

  /** One of MAX_SESSIONS places: an operation waits for one, and hands it to the next waiting one when done. */
  async function enter(): Promise<void> {
    if (free > 0) free -= 1;
    else await new Promise<void>((resolve) => waiting.push(resolve));
  }
  function leave(): void {
    const next = waiting.shift();
    if (next === undefined) free += 1;
    else next();
  }

  /**
   * A session for one operation. After an outage the sessions, the login and the key's handle may all be gone
   * (an HSM restarted): the next operation opens them again.
   */
  function take(): Buffer {
    if (closed)
      throw new MasterKeyProviderError("unavailable", `the PKCS#11 provider for ${where} is closed`);
    if (connection.broken) {
      for (const session of idle.splice(0)) closeQuietly(lib, session);
      connection = reconnect();
      return connection.session;
    }
    const session = idle.pop();
    if (session !== undefined) return session;
    try {
      return lib.C_OpenSession(slot, pkcs11.CKF_SERIAL_SESSION);
    } catch (error) {
      throw failure(error, `cannot open a session on ${where}`);
    }
  }

  /** A session whose token failed is closed, and the connection opened again by the next operation. */
  function give(session: Buffer, healthy: boolean): void {
    if (healthy && !closed) {
      idle.push(session);
      return;
    }
    if (!healthy) connection.broken = true;
    closeQuietly(lib, session);
  }

  async function run(
    operation: "encrypt" | "decrypt",
    input: Buffer,
    iv: Buffer,
    context: string,
  ): Promise<Buffer> {
    await enter();
    let session: Buffer;
    try {
      session = take();
    } catch (error) {
      leave();
      throw error;
    }
    let healthy = true;
    try {
      const mechanism = {
        mechanism: pkcs11.CKM_AES_GCM,
        // PKCS#11 2.40's CK_GCM_PARAMS (with ulIvBits): SoftHSM2, CloudHSM and Luna take this layout.
        parameter: {
          type: pkcs11.CK_PARAMS_GCM,
          iv,
          ivBits: IV_BYTES * 8,
          aad: Buffer.from(context, "utf8"),
          tagBits: TAG_BYTES * 8,
        },
      };
      if (operation === "encrypt") {
        lib.C_EncryptInit(session, mechanism, connection.key);
        return await lib.C_EncryptAsync(session, input, Buffer.alloc(input.length + TAG_BYTES));
      }
      lib.C_DecryptInit(session, mechanism, connection.key);
      return await lib.C_DecryptAsync(session, input, Buffer.alloc(input.length));
    } catch (error) {
      const code = returnValue(error);
      if (operation === "decrypt" && code !== undefined && NOT_AUTHENTIC.has(code))
        throw new DecryptionError();
      if (code !== undefined && MECHANISM_REFUSED.has(code)) {
        throw new MasterKeyProviderError(
          "key",
          `${where} refuses CKM_AES_GCM with key "${settings.keyLabel}" (${code}): see docs/keys.md#vendors`,
        );
      }
      if (code === undefined || OUTAGES.has(code)) {
        healthy = false;
        throw failure(error, `${where} failed to ${operation}`);
      }
      // Anything else (CKR_GENERAL_ERROR, which SoftHSM2 returns for a tag that does not match, or
      // CKR_FUNCTION_FAILED) may be the data or the token: keys/providers/custody.ts tells them apart.
      throw error;
    } finally {
      give(session, healthy);
      leave();
    }
  }

  return {
    name: "pkcs11",
    keyVersion: connection.keyVersion,
    details: {
      module: settings.module,
      token: tokenLabel,
      slot: `0x${slotNumber(slot).toString(16)}`,
      key_label: settings.keyLabel,
      mechanism: "CKM_AES_GCM",
      gcm_iv: settings.gcmIv,
    },
    async wrap(key, context) {
      // A token that makes the IV itself writes it into this buffer during the call: it is read back afterwards.
      const iv = settings.gcmIv === "token" ? Buffer.alloc(IV_BYTES) : randomBytes(IV_BYTES);
      const sealed = await run("encrypt", key, iv, context);
      // A token that left it as it was would have used the same (zero) IV for every key: never stored.
      if (settings.gcmIv === "token" && iv.every((byte) => byte === 0)) {
        throw new MasterKeyProviderError(
          "key",
          `${where} did not write the IV it generated into the IV buffer: set TESSERA_PKCS11_GCM_IV=random ` +
            "for a token that takes the IV from Tessera",
        );
      }
      return Buffer.concat([Buffer.of(FORMAT), iv, sealed]);
    },
    async unwrap(wrapped, context) {
      if (wrapped.length <= 1 + IV_BYTES + TAG_BYTES || wrapped[0] !== FORMAT) throw new DecryptionError();
      const iv = Buffer.from(wrapped.subarray(1, 1 + IV_BYTES));
      return run("decrypt", wrapped.subarray(1 + IV_BYTES), iv, context);
    },
    close() {
      if (!closed) {
        closed = true;
        for (const session of idle.splice(0)) closeQuietly(lib, session);
        releaseLibrary(settings.module);
      }
      return Promise.resolve();
    },
  };
}

interface Connection {
  readonly session: Buffer;
  readonly key: Buffer;
  readonly keyVersion: string;
  broken: boolean;
}

/** A session, logged in, and the key's handle: at start, and again after an outage. */
function openConnection(
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

function findSlot(lib: PKCS11, settings: Pkcs11Settings): { slot: Buffer; tokenLabel: string } {
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
function requireGcm(pkcs11: Pkcs11js, lib: PKCS11, slot: Buffer, where: string): void {
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

async function loadBinding(): Promise<Pkcs11js> {
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

function acquireLibrary(pkcs11: Pkcs11js, module: string): PKCS11 {
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

function releaseLibrary(module: string): void {
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

function readPin(file: string): string {
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
function returnValue(error: unknown): string | undefined {
  const message = error instanceof Error ? error.message : "";
  return /^CKR_[A-Z0-9_]+$/.test(message) ? message : undefined;
}

/** A failure of the token or the connection: `unavailable`, with the return value for the operator. */
function failure(error: unknown, what: string): MasterKeyProviderError {
  return new MasterKeyProviderError("unavailable", `${what} (${returnValue(error) ?? firstLine(error)})`, {
    cause: error,
  });
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n", 1)[0]!.slice(0, 200);
}

function closeQuietly(lib: PKCS11, session: Buffer): void {
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

function slotNumber(slot: Buffer): bigint {
  return unsigned(slot);
}
