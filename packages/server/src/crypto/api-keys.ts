import { createHash, randomBytes } from "node:crypto";

export type KeyKind = "private" | "public" | "management" | "session";

const PREFIXES: Record<KeyKind, string> = {
  private: "key_prv_",
  public: "key_pub_",
  management: "key_mgt_",
  session: "key_ses_",
};

/** Whether `key` is of this kind by its prefix (which routes it to its lookup; it proves nothing by itself). */
export function isKeyOfKind(key: string, kind: KeyKind): boolean {
  return key.startsWith(PREFIXES[kind]);
}

/** 32 random bytes behind a typed prefix, so a leaked key is recognisable (and greppable by secret scanners). */
export function generateApiKey(kind: KeyKind): string {
  return PREFIXES[kind] + randomBytes(32).toString("base64url");
}

/**
 * Only this digest is stored. A fast hash is enough: the input carries 256 bits of entropy, so there is nothing
 * for a slow KDF to protect against, and authentication stays a single indexed lookup.
 */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}
