/** Where a raw master key comes from; reading or creating the file is start-up work, not parsing. */
export type MasterKeySource =
  { kind: "value"; key: Buffer } | { kind: "file"; path: string } | { kind: "dev-file"; path: string };

/** The master key's provider (docs/keys.md#providers); opening it is start-up work (open.ts). */
export type MasterKeyConfig =
  | { readonly provider: "raw"; readonly source: MasterKeySource }
  | { readonly provider: "pkcs11"; readonly pkcs11: Pkcs11Settings }
  | { readonly provider: "command"; readonly command: CommandSettings };

/** A raw master key as configured: 32 bytes in base64. */
export function decodeMasterKey(text: string): Buffer | undefined {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) return undefined;
  const key = Buffer.from(trimmed, "base64");
  return key.length === 32 ? key : undefined;
}

export interface Pkcs11Settings {
  /** The vendor's PKCS#11 library (SoftHSM2, CloudHSM, Luna, YubiHSM, a cloud HSM's client). */
  readonly module: string;
  /** The token, by its label or by its slot id. */
  readonly token: { readonly label: string } | { readonly slot: bigint };
  /** Holds the user PIN (one trailing newline is dropped). */
  readonly pinFile: string;
  /** CKA_LABEL of the AES-256 key that wraps the tenant keys. */
  readonly keyLabel: string;
  /**
   * Who makes each wrapping's GCM IV: `random`, Tessera (96 random bits), or `token`, the token itself, which
   * writes it into the IV buffer (AWS CloudHSM requires this, and refuses an IV it is given).
   */
  readonly gcmIv: "random" | "token";
}

export interface CommandSettings {
  /** The KMS key's name (an ARN, a resource name, a transit key): this master key's version. */
  readonly keyId: string;
  /** argv of the command that wraps: an absolute path first, no shell. */
  readonly wrap: readonly string[];
  readonly unwrap: readonly string[];
  /** `base64`: text on stdin and stdout (aws, az, vault); `binary`: raw bytes (gcloud). */
  readonly encoding: "base64" | "binary";
  readonly timeoutMs: number;
  /** The names of the variables the commands get from Tessera's environment; nothing else is passed. */
  readonly env: readonly string[];
}
