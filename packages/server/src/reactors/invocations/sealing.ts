import { openWith, sealUnder } from "../../keys/sealing.js";
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
  return sealUnder(key, aad(tenantId, invocationId, part), plaintext).ciphertext;
}

export function openJson(
  key: Buffer,
  tenantId: string,
  invocationId: string,
  part: Part,
  sealed: string,
): unknown {
  const plaintext = openWith(key, aad(tenantId, invocationId, part), { ciphertext: sealed });
  return JSON.parse(plaintext.toString("utf8")) as unknown;
}
