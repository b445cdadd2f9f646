import { createHmac } from "node:crypto";
import { secretKey } from "./secret-key.js";

/**
 * Search-index values are stored only as HMACs under a per-tenant key (DESIGN §5.2): equality search still
 * works, but the table reveals nothing without the key, and the same value gives unrelated digests in two
 * tenants. Values are case-folded first, which gives the spec's case-insensitive exact match.
 */
export function blindIndex(key: Buffer, value: string): string {
  return createHmac("sha256", secretKey(key)).update(foldCase(value), "utf8").digest("base64url");
}

/** A token's fingerprint: an HMAC of its evaluated fingerprint expression, exact (not case-folded). */
export function fingerprintOf(key: Buffer, value: string): string {
  return createHmac("sha256", secretKey(key)).update(value, "utf8").digest("base64url");
}

export function foldCase(value: string): string {
  return value.normalize("NFKC").toLowerCase();
}
