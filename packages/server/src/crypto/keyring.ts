import { randomBytes } from "node:crypto";
import { decrypt, encrypt } from "./cipher.js";

/**
 * Per-tenant secrets (DESIGN §5.1–5.2): `data` encrypts token data, `fingerprint` and `index` key the HMACs of
 * fingerprints and search-index values, `webhook` signs webhook deliveries, `audit` chains the audit log. Each is
 * versioned so it can rotate. Tenants made before `audit` existed get that key when their log is first sealed.
 */
export const TENANT_KEY_PURPOSES = ["data", "fingerprint", "index", "webhook", "audit"] as const;
export type TenantKeyPurpose = (typeof TENANT_KEY_PURPOSES)[number];

export interface WrappedTenantKey {
  readonly purpose: TenantKeyPurpose;
  readonly version: number;
  readonly wrapped: string;
}

export interface Keyring {
  /** Fresh random keys for a new tenant, wrapped by the master key. */
  newTenantKeys(tenantId: string): WrappedTenantKey[];
  /** A fresh random key for one purpose at a given version (key rotation). */
  newKey(tenantId: string, purpose: TenantKeyPurpose, version: number): WrappedTenantKey;
  unwrap(tenantId: string, key: WrappedTenantKey): Buffer;
}

/** The master key never leaves this closure; only wrapped keys are handed to the store. */
export function createKeyring(masterKey: Buffer): Keyring {
  if (masterKey.length !== 32) throw new Error("the master key must be 32 bytes");
  const master = Buffer.from(masterKey);
  const aad = (tenantId: string, purpose: TenantKeyPurpose, version: number) =>
    `tessera:tenant-key:v1:${tenantId}:${purpose}:${version}`;

  const newKey = (tenantId: string, purpose: TenantKeyPurpose, version: number): WrappedTenantKey => ({
    purpose,
    version,
    wrapped: encrypt(master, randomBytes(32), aad(tenantId, purpose, version)).toString("base64"),
  });

  return {
    newTenantKeys: (tenantId) => TENANT_KEY_PURPOSES.map((purpose) => newKey(tenantId, purpose, 1)),
    newKey,
    unwrap(tenantId, key) {
      return decrypt(master, Buffer.from(key.wrapped, "base64"), aad(tenantId, key.purpose, key.version));
    },
  };
}
