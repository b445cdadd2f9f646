import { openWith, sealUnder } from "../keys/sealing.js";
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
  return sealUnder(key, aad(tenantId, tokenId), plaintext);
}

export function openBytes(key: Buffer, tenantId: string, tokenId: string, sealed: SealedData): Buffer {
  return openWith(key, aad(tenantId, tokenId), sealed);
}

export function sealData(key: VersionedKey, tenantId: string, tokenId: string, data: unknown): SealedData {
  return sealBytes(key, tenantId, tokenId, Buffer.from(JSON.stringify(data), "utf8"));
}

export function openData(key: Buffer, tenantId: string, tokenId: string, sealed: SealedData): unknown {
  return JSON.parse(openBytes(key, tenantId, tokenId, sealed).toString("utf8")) as unknown;
}
