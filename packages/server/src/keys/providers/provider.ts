import type { KeyWrapper } from "../../crypto/keyring.js";

/** Where the master key lives (docs/keys.md#providers). */
export const PROVIDER_NAMES = ["raw", "pkcs11", "command"] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

/**
 * A master key behind one small interface: it wraps and unwraps tenant keys (crypto/keyring.ts binds each to its
 * tenant, purpose and version through `context`) and says which key it is, without a secret. The HSM and KMS
 * providers never hand the master key to this process; the raw one holds it in memory.
 */
export interface MasterKeyProvider extends KeyWrapper {
  readonly name: ProviderName;
  /**
   * Names this master key among all the keys an operator may configure over the store's life, so that a wrapped
   * key can record which one wrapped it (docs/keys.md#key-versions): `raw:<16 hex>` (a key check value), the PKCS#11
   * token and key labels, the KMS key id. Not secret; logged at start.
   */
  readonly keyVersion: string;
  /** The rest of the start-up line: module path, token, key label, command. Never a PIN, a key or an environment. */
  readonly details: Readonly<Record<string, string>>;
  /** Releases the module, sessions and child processes; wrap and unwrap fail afterwards. */
  close(): Promise<void>;
}

/**
 * Why a provider cannot be used, each with its exit code at start (docs/cli.md#exit-codes-and-errors):
 * - `module`: the PKCS#11 module or the KMS command cannot be loaded or started;
 * - `token`: no token with that label or slot;
 * - `login`: the token refuses the PIN;
 * - `key`: no usable key with that label, or a KMS command whose answers are not what was wrapped;
 * - `unavailable`: the HSM or KMS does not answer (device error, timeout, a command that fails); may pass by itself.
 */
export type MasterKeyFailure = "module" | "token" | "login" | "key" | "unavailable";

/**
 * The provider itself failed, as opposed to a wrapped key that does not open (DecryptionError). Messages name the
 * module, token, label or command and the reason; never a PIN or key material.
 */
export class MasterKeyProviderError extends Error {
  constructor(
    readonly failure: MasterKeyFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "MasterKeyProviderError";
  }
}

/**
 * The first byte of a wrapped key says which kind of provider made it: 0x01 is the raw key's AES-GCM format
 * (crypto/cipher.ts, unchanged since the first store), `P` a PKCS#11 token's, `C` a KMS command's. The start-up check
 * names the kind when a store's keys were wrapped by another provider than the configured one.
 */
export const WRAPPED_BY: Readonly<Record<number, ProviderName>> = {
  0x01: "raw",
  0x50: "pkcs11",
  0x43: "command",
};

export function wrappedBy(wrapped: Buffer): ProviderName | undefined {
  return wrapped.length === 0 ? undefined : WRAPPED_BY[wrapped[0]!];
}
