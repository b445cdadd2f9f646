import { randomBytes } from "node:crypto";
import type { PKCS11 } from "pkcs11js";
import { DecryptionError } from "../../crypto/cipher.js";
import {
  acquireLibrary,
  closeQuietly,
  failure,
  findSlot,
  loadBinding,
  openConnection,
  readPin,
  releaseLibrary,
  requireGcm,
  returnValue,
  slotNumber,
  type Pkcs11js,
} from "./pkcs11-token.js";
import { MasterKeyProviderError, type MasterKeyProvider } from "./provider.js";
import type { Pkcs11Settings } from "./settings.js";

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
