import { openWith, sealUnder } from "../keys/sealing.js";
import type { VersionedKey } from "../keys/tenant-keys.js";
import type { SealedConfiguration } from "./types.js";

/**
 * The AAD binds a reactor's configuration to its tenant and id, as token data is bound to its token: a
 * ciphertext copied to another reactor's row does not decrypt.
 */
function aad(tenantId: string, reactorId: string): string {
  return `tessera:reactor:v1:${tenantId}:${reactorId}`;
}

export function sealConfigurationBytes(
  key: VersionedKey,
  tenantId: string,
  reactorId: string,
  plaintext: Buffer,
): SealedConfiguration {
  return sealUnder(key, aad(tenantId, reactorId), plaintext);
}

export function openConfigurationBytes(
  key: Buffer,
  tenantId: string,
  reactorId: string,
  sealed: SealedConfiguration,
): Buffer {
  return openWith(key, aad(tenantId, reactorId), sealed);
}

export function sealConfiguration(
  key: VersionedKey,
  tenantId: string,
  reactorId: string,
  configuration: Readonly<Record<string, string>>,
): SealedConfiguration {
  return sealConfigurationBytes(key, tenantId, reactorId, Buffer.from(JSON.stringify(configuration), "utf8"));
}

export function openConfiguration(
  key: Buffer,
  tenantId: string,
  reactorId: string,
  sealed: SealedConfiguration,
): Record<string, string> {
  const text = openConfigurationBytes(key, tenantId, reactorId, sealed).toString("utf8");
  return JSON.parse(text) as Record<string, string>;
}
