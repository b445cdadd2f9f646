import { decrypt, encrypt } from "../crypto/cipher.js";
import type { VersionedKey } from "./tenant-keys.js";

/** A value sealed under one version of a tenant's data key. */
export interface Sealed {
  /** base64 of the AES-256-GCM output. */
  readonly ciphertext: string;
  readonly keyVersion: number;
}

/**
 * AES-256-GCM under a tenant's data key. The AAD names what the value belongs to (tenant, row, part), so a
 * ciphertext copied anywhere else does not decrypt; each feature builds its own (tokens/sealing.ts,
 * reactors/sealing.ts, reactors/invocations/sealing.ts).
 */
export function sealUnder(key: VersionedKey, aad: string, plaintext: Buffer): Sealed {
  return { ciphertext: encrypt(key.key, plaintext, aad).toString("base64"), keyVersion: key.version };
}

export function openWith(key: Buffer, aad: string, sealed: Pick<Sealed, "ciphertext">): Buffer {
  return decrypt(key, Buffer.from(sealed.ciphertext, "base64"), aad);
}
