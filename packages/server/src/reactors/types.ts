/** A reactor as stored, without its configuration, which stays sealed until it is needed. */
export interface ReactorRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly name: string;
  readonly code: string;
  /** The Application `svc` acts as; null without one, or once that Application was deleted. */
  readonly applicationId: string | null;
  /** Grows by one with every update (PUT or PATCH). */
  readonly version: number;
  readonly createdBy: string | null;
  readonly createdAt: string;
  readonly modifiedBy: string | null;
  readonly modifiedAt: string | null;
}

export interface Reactor extends ReactorRecord {
  readonly configuration: Readonly<Record<string, string>>;
}

/** What an invocation needs of a stored reactor, configuration decrypted (invoke.ts's `loadReactor`). */
export interface RunnableReactor {
  readonly id: string;
  readonly version: number;
  readonly code: string;
  readonly configuration: Record<string, string>;
  readonly applicationId: string | null;
}

export interface SealedConfiguration {
  /** base64 of the AES-256-GCM output. */
  readonly ciphertext: string;
  readonly keyVersion: number;
}
