import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import { ConfigError } from "../../shared/config-error.js";
import { DecryptionError } from "../../crypto/cipher.js";
import { createKeyring, type WrappedTenantKey } from "../../crypto/keyring.js";
import { commandProvider } from "./command.js";
import { createMasterKeyCustody, PROBE_CONTEXT, type MasterKeyCustody, type Probe } from "./custody.js";
import { openPkcs11Provider } from "./pkcs11.js";
import { MasterKeyProviderError, wrappedBy, type MasterKeyProvider, type ProviderName } from "./provider.js";
import { rawProvider } from "./raw.js";
import { createDevMasterKey, readMasterKey } from "./key-file.js";
import type { MasterKeyConfig } from "./settings.js";

/** A wrapped key the store holds, with its tenant (keys/store.ts `any`). */
export interface StoredTenantKey {
  readonly tenantId: string;
  readonly key: WrappedTenantKey;
}

/** The configured master key is not the one that wrapped the store's keys: the start is refused (exit 84). */
export class MasterKeyMismatchError extends Error {
  constructor(configured: ProviderName, storedBy: ProviderName | undefined, recorded?: string | null) {
    super(
      "the configured master key cannot unwrap this store's keys: it is not the key the store was created with" +
        (recorded === undefined || recorded === null
          ? ""
          : ` (they are recorded as wrapped by master key ${recorded}: configure that key, or during a rotation ` +
            "give it as TESSERA_MASTER_KEY_PREVIOUS_FILE until `tessera keys rotate-master` has re-wrapped them, " +
            "docs/keys.md#rotating-the-master-key)") +
        (storedBy === undefined || storedBy === configured || (recorded !== undefined && recorded !== null)
          ? ""
          : ` (they were wrapped by the ${storedBy} provider, and TESSERA_MASTER_KEY_PROVIDER is ${configured}: ` +
            "changing provider is a master key rotation, docs/keys.md#rotating-the-master-key)"),
    );
    this.name = "MasterKeyMismatchError";
  }
}

/** A provider opened and tried, waiting for the store's keys to be checked against it. */
export interface OpeningMasterKey {
  /**
   * Unwraps `stored`, one key the store holds per master key version its rows record (none in a new store), logs
   * the start-up line naming the provider and the key version, and starts the cache. The development key file is
   * created here, only for a store without keys, which a new key can serve.
   */
  finish(stored: readonly StoredTenantKey[]): Promise<MasterKeyCustody>;
  /** Releases the provider when the start stops before `finish` answers. */
  abandon(): Promise<void>;
}

/**
 * The start-up checks (docs/keys.md#start-up-checks), in the order that lets a start refused for its key write
 * nothing: the provider is opened (module, token, PIN, key label) and made to wrap and unwrap a test key before
 * the store is opened; the store's keys are tried in `finish`, before any migration. Each failure is one
 * MasterKeyProviderError (or ConfigError, MasterKeyMismatchError) whose kind the CLI turns into an exit code.
 */
export async function openMasterKey(
  config: MasterKeyConfig,
  deps: { ttlMs: number; clock: Clock; log: Logger; previous?: MasterKeyConfig | undefined },
): Promise<OpeningMasterKey> {
  const previous = deps.previous === undefined ? undefined : await openTargetProvider(deps.previous);
  let opened: MasterKeyProvider | undefined;
  let ready: { provider: MasterKeyProvider; probe: Probe } | undefined;
  try {
    opened = await openProvider(config);
    if (opened !== undefined) {
      const probe = await probeProvider(opened);
      ready = { provider: previous === undefined ? opened : withPrevious(opened, previous), probe };
    }
  } catch (error) {
    await opened?.close();
    await previous?.close();
    throw error;
  }
  return {
    async finish(stored) {
      if (ready === undefined) {
        const dev = devProvider(config, stored.length > 0, deps.log);
        const probe = await probeProvider(dev);
        ready = { provider: previous === undefined ? dev : withPrevious(dev, previous), probe };
      }
      const { provider, probe } = ready;
      for (const each of stored) await verifyStoredKey(provider, each);
      deps.log.info(
        {
          provider: provider.name,
          key_version: provider.keyVersion,
          ...provider.details,
          ...(previous !== undefined && { previous_key_version: previous.keyVersion }),
        },
        `master key: ${provider.name} provider, key version ${provider.keyVersion}` +
          (previous === undefined ? "" : `; previous key version ${previous.keyVersion} readable`),
      );
      return createMasterKeyCustody(provider, { probe, ttlMs: deps.ttlMs, clock: deps.clock, log: deps.log });
    },
    abandon: async () => {
      await ready?.provider.close();
      if (ready === undefined) await previous?.close();
    },
  };
}

/**
 * A master key given explicitly (the previous one during a rotation, or `rotate-master --to`), opened and made to
 * wrap and unwrap a test key, with the same failures as at start.
 */
export async function openTargetProvider(config: MasterKeyConfig): Promise<MasterKeyProvider> {
  const provider = await openProvider(config);
  if (provider === undefined) throw new ConfigError(["a raw master key file to rotate with must exist"]);
  try {
    await probeProvider(provider);
  } catch (error) {
    await provider.close();
    throw error;
  }
  return provider;
}

/**
 * The configured master key with the one being rotated away from: everything is wrapped by `primary`; a row is
 * unwrapped by the key its row records, or, for rows that record none (stored before versions were), by
 * `primary` and then by `previous` if `primary` cannot open it.
 */
export function withPrevious(primary: MasterKeyProvider, previous: MasterKeyProvider): MasterKeyProvider {
  return {
    name: primary.name,
    keyVersion: primary.keyVersion,
    details: primary.details,
    wrap: (key, context) => primary.wrap(key, context),
    async unwrap(wrapped, context, version) {
      if (version === previous.keyVersion) return previous.unwrap(wrapped, context, version);
      if (version === primary.keyVersion) return primary.unwrap(wrapped, context, version);
      try {
        return await primary.unwrap(wrapped, context, version);
      } catch (error) {
        if (!(error instanceof DecryptionError)) throw error;
        return previous.unwrap(wrapped, context, version);
      }
    },
    async close() {
      await primary.close();
      await previous.close();
    },
  };
}

/** The configured provider, or undefined for a development key file that does not exist yet. */
async function openProvider(config: MasterKeyConfig): Promise<MasterKeyProvider | undefined> {
  switch (config.provider) {
    case "raw": {
      const { source } = config;
      const configured = readMasterKey(source);
      if (!("key" in configured)) return undefined;
      return rawProvider(
        configured.key,
        source.kind === "value"
          ? { source: "TESSERA_MASTER_KEY" }
          : {
              source: source.kind === "file" ? "TESSERA_MASTER_KEY_FILE" : "development key file",
              file: source.path,
            },
      );
    }
    case "pkcs11":
      return openPkcs11Provider(config.pkcs11);
    case "command":
      return commandProvider(config.command);
  }
}

/**
 * The development key file, created now that the store is known to hold no keys. A store that holds keys was made
 * with another master key, which a new one could never replace: the start is refused and nothing is written.
 */
function devProvider(config: MasterKeyConfig, storeHoldsKeys: boolean, log: Logger): MasterKeyProvider {
  if (config.provider !== "raw" || config.source.kind !== "dev-file") {
    throw new Error("only a development key file is created at start");
  }
  const file = config.source.path;
  if (storeHoldsKeys) {
    throw new ConfigError([
      `the master key file ${file} does not exist, but this store holds data encrypted under a master ` +
        "key: restore that file, or give that key in TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE. No key was " +
        "generated, since a new one could not decrypt the store.",
    ]);
  }
  const created = createDevMasterKey(file);
  if (created.generated) {
    log.warn(
      { path: file },
      "DEVELOPMENT MODE: generated a master key file next to the data. Anyone who reads both can decrypt " +
        "every token. In production set TESSERA_MASTER_KEY or TESSERA_MASTER_KEY_FILE from a secret store.",
    );
  }
  return rawProvider(created.key, { source: "development key file", file });
}

/**
 * Wraps a random key and unwraps it again: the key can do both (CKA_ENCRYPT and CKA_DECRYPT, a KMS policy that
 * allows both, commands that agree). The wrapped test key is kept: unwrapping it tells later whether the provider
 * answers (custody.ts).
 */
async function probeProvider(provider: MasterKeyProvider): Promise<Probe> {
  const key = randomBytes(32);
  const what = `the ${provider.name} master key (${provider.keyVersion})`;
  let wrapped: Buffer;
  try {
    wrapped = await provider.wrap(key, PROBE_CONTEXT);
  } catch (error) {
    throw startFailure(error, `${what} cannot wrap a test key`);
  }
  let unwrapped: Buffer;
  try {
    unwrapped = await provider.unwrap(wrapped, PROBE_CONTEXT);
  } catch (error) {
    if (error instanceof DecryptionError) {
      throw new MasterKeyProviderError("key", `${what} cannot unwrap the test key it has just wrapped`);
    }
    throw startFailure(error, `${what} cannot unwrap a test key`);
  }
  if (!unwrapped.equals(key)) {
    throw new MasterKeyProviderError(
      "key",
      `${what} unwrapped a test key to another value: check the commands`,
    );
  }
  return { key, wrapped };
}

async function verifyStoredKey(
  provider: MasterKeyProvider,
  stored: StoredTenantKey | undefined,
): Promise<void> {
  if (stored === undefined) return;
  try {
    await createKeyring(provider).unwrap(stored.tenantId, stored.key);
  } catch (error) {
    if (error instanceof MasterKeyProviderError) throw error;
    // The same provider has just wrapped and unwrapped a test key: whatever else went wrong is the stored key's.
    throw new MasterKeyMismatchError(
      provider.name,
      wrappedBy(Buffer.from(stored.key.wrapped, "base64")),
      stored.key.masterKeyVersion === provider.keyVersion ? undefined : stored.key.masterKeyVersion,
    );
  }
}

/** What stops a start for the master key: told apart from a store that cannot be used. */
export function isMasterKeyFailure(error: unknown): boolean {
  return (
    error instanceof MasterKeyProviderError ||
    error instanceof MasterKeyMismatchError ||
    error instanceof ConfigError
  );
}

function startFailure(error: unknown, what: string): MasterKeyProviderError {
  if (error instanceof MasterKeyProviderError) return error;
  return new MasterKeyProviderError(
    "unavailable",
    `${what}: ${error instanceof Error ? error.message : String(error)}`,
    { cause: error },
  );
}
