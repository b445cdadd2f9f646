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
  /**
   * The master key that wrapped it (a provider's key version, docs/keys.md#key-versions); null for rows stored
   * before versions were recorded, and for keys wrapped by a bare raw key (tests and tools).
   */
  readonly masterKeyVersion?: string | null;
}

/**
 * What the master key does, wherever it lives (docs/keys.md): `wrap` seals a tenant key so that only the same
 * master key and the same `context` open it again; `unwrap` opens it or throws. The raw key below does it in this
 * process; keys/providers/ has the HSM and KMS ones, which are asynchronous by nature.
 */
export interface KeyWrapper {
  /** The version of the master key `wrap` uses, recorded beside each wrapped key; absent for a bare raw key. */
  readonly keyVersion?: string;
  wrap(key: Buffer, context: string): Promise<Buffer>;
  /**
   * `keyVersion`: the master key the row records as its wrapper, when it does; a wrapper that holds two master
   * keys (during a rotation) picks by it.
   */
  unwrap(wrapped: Buffer, context: string, keyVersion?: string | null): Promise<Buffer>;
}

export interface Keyring {
  /** Fresh random keys for a new tenant, wrapped by the master key. */
  newTenantKeys(tenantId: string): Promise<WrappedTenantKey[]>;
  /** A fresh random key for one purpose at a given version (key rotation). */
  newKey(tenantId: string, purpose: TenantKeyPurpose, version: number): Promise<WrappedTenantKey>;
  unwrap(tenantId: string, key: WrappedTenantKey): Promise<Buffer>;
}

/**
 * A raw 32-byte master key held in memory (TESSERA_MASTER_KEY, TESSERA_MASTER_KEY_FILE): AES-256-GCM with the
 * context as AAD, the format every store written before the providers existed holds (crypto/cipher.ts).
 */
export function rawKeyWrapper(masterKey: Buffer): KeyWrapper {
  if (masterKey.length !== 32) throw new Error("the master key must be 32 bytes");
  const master = Buffer.from(masterKey);
  return {
    wrap: async (key, context) => encrypt(master, key, context),
    unwrap: async (wrapped, context) => decrypt(master, wrapped, context),
  };
}

/**
 * The AAD that binds a wrapped key to its tenant, purpose and version: a wrapped key copied to another row does
 * not unwrap there.
 */
export function tenantKeyContext(tenantId: string, purpose: TenantKeyPurpose, version: number): string {
  return `tessera:tenant-key:v1:${tenantId}:${purpose}:${version}`;
}

/**
 * Tenant keys wrapped by the master key: only wrapped keys are handed to the store. `master` is a raw key (tests
 * and tools) or a provider's wrapper (keys/providers/).
 */
export function createKeyring(master: Buffer | KeyWrapper): Keyring {
  const wrapper = Buffer.isBuffer(master) ? rawKeyWrapper(master) : master;

  const newKey = async (tenantId: string, purpose: TenantKeyPurpose, version: number) => {
    const wrapped = await wrapper.wrap(randomBytes(32), tenantKeyContext(tenantId, purpose, version));
    return {
      purpose,
      version,
      wrapped: wrapped.toString("base64"),
      masterKeyVersion: wrapper.keyVersion ?? null,
    };
  };

  return {
    newTenantKeys: (tenantId) =>
      Promise.all(TENANT_KEY_PURPOSES.map((purpose) => newKey(tenantId, purpose, 1))),
    newKey,
    unwrap: (tenantId, key) =>
      wrapper.unwrap(
        Buffer.from(key.wrapped, "base64"),
        tenantKeyContext(tenantId, key.purpose, key.version),
        key.masterKeyVersion,
      ),
  };
}
