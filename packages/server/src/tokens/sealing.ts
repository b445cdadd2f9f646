import { decrypt, encrypt } from "../crypto/cipher.js";
import type { VersionedKey } from "../keys/tenant-keys.js";
import type { SealedData } from "./types.js";

/** The AAD binds a token's data to its tenant and id: a ciphertext copied to another row does not decrypt. */
function aad(tenantId: string, tokenId: string): string {
  return `tessera:token:v1:${tenantId}:${tokenId}`;
}

export function sealBytes(
  key: VersionedKey,
  tenantId: string,
  tokenId: string,
  plaintext: Buffer,
): SealedData {
  return {
    ciphertext: encrypt(key.key, plaintext, aad(tenantId, tokenId)).toString("base64"),
    keyVersion: key.version,
  };
}

export function openBytes(key: Buffer, tenantId: string, tokenId: string, sealed: SealedData): Buffer {
  return decrypt(key, Buffer.from(sealed.ciphertext, "base64"), aad(tenantId, tokenId));
}

export function sealData(key: VersionedKey, tenantId: string, tokenId: string, data: unknown): SealedData {
  return sealBytes(key, tenantId, tokenId, Buffer.from(JSON.stringify(data), "utf8"));
}

export function openData(key: Buffer, tenantId: string, tokenId: string, sealed: SealedData): unknown {
  return JSON.parse(openBytes(key, tenantId, tokenId, sealed).toString("utf8")) as unknown;
}
