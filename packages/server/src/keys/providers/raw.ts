import { createHmac } from "node:crypto";
import { rawKeyWrapper } from "../../crypto/keyring.js";
import type { MasterKeyProvider } from "./provider.js";

/**
 * The master key as 32 bytes in this process's memory (TESSERA_MASTER_KEY, TESSERA_MASTER_KEY_FILE or the
 * development file): today's AES-256-GCM wrapping, byte for byte. `origin` says where it came from, for the log.
 */
export function rawProvider(masterKey: Buffer, origin: Readonly<Record<string, string>>): MasterKeyProvider {
  const wrapper = rawKeyWrapper(masterKey);
  return {
    name: "raw",
    keyVersion: `raw:${keyCheckValue(masterKey)}`,
    details: origin,
    wrap: (key, context) => wrapper.wrap(key, context),
    unwrap: (wrapped, context) => wrapper.unwrap(wrapped, context),
    close: () => Promise.resolve(),
  };
}

/**
 * A key check value: 64 bits of an HMAC under the key of a fixed label. It tells two keys apart (and which one a
 * row was wrapped with) and reveals nothing usable about the key, like the KCVs HSMs print for AES keys.
 */
function keyCheckValue(masterKey: Buffer): string {
  return createHmac("sha256", masterKey).update("tessera:master-key-check:v1").digest("hex").slice(0, 16);
}
