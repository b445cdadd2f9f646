import { decrypt, encrypt } from "../../crypto/cipher.js";
import type { VersionedKey } from "../../keys/tenant-keys.js";

/** What is sealed on an invocation row: the detokenized arguments, then the outcome. */
type Part = "args" | "outcome";

/**
 * Both hold token data, so both are sealed like it: AES-256-GCM under the tenant's data key, the AAD binding
 * tenant, invocation and part, so that neither decrypts anywhere but where it was written.
 */
function aad(tenantId: string, invocationId: string, part: Part): string {
  return `tessera:invocation:v1:${tenantId}:${invocationId}:${part}`;
}

export function sealJson(
  key: VersionedKey,
  tenantId: string,
  invocationId: string,
  part: Part,
  value: unknown,
): string {
  const plaintext = Buffer.from(JSON.stringify(value), "utf8");
  return encrypt(key.key, plaintext, aad(tenantId, invocationId, part)).toString("base64");
}

export function openJson(
  key: Buffer,
  tenantId: string,
  invocationId: string,
  part: Part,
  sealed: string,
): unknown {
  const plaintext = decrypt(key, Buffer.from(sealed, "base64"), aad(tenantId, invocationId, part));
  return JSON.parse(plaintext.toString("utf8")) as unknown;
}
