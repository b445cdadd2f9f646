import type { TokenType } from "./token-types.js";

/** A mask: one expression, or one per field of a complex token's data. */
export type MaskExpression = string | Readonly<Record<string, string>>;

/** Everything about a token but its data, which stays encrypted until a caller may see it. */
export interface TokenRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly type: TokenType;
  readonly fingerprint: string | null;
  readonly fingerprintExpression: string | null;
  readonly mask: MaskExpression | null;
  readonly searchIndexes: readonly string[];
  readonly metadata: Readonly<Record<string, string>>;
  readonly containers: readonly string[];
  readonly expiresAt: string | null;
  readonly createdBy: string | null;
  readonly createdAt: string;
  readonly modifiedBy: string | null;
  readonly modifiedAt: string | null;
}

export interface Token extends TokenRecord {
  readonly data: unknown;
}

export interface SealedData {
  /** base64 of the AES-256-GCM output. */
  readonly ciphertext: string;
  readonly keyVersion: number;
}

/** What the index tables hold for one token; all of it is derived from the token, none of it is plaintext. */
export interface TokenIndexRows {
  readonly blindValues: readonly string[];
  readonly containers: readonly string[];
  readonly metadata: readonly (readonly [key: string, folded: string])[];
}
