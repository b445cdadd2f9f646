import type { Logger } from "pino";
import type { Clock } from "../../shared/clock.js";
import { DecryptionError } from "../../crypto/cipher.js";
import type { KeyWrapper } from "../../crypto/keyring.js";
import { AppError } from "../../server/errors.js";
import { MasterKeyProviderError, type MasterKeyProvider } from "./provider.js";

/** The context the start-up probe is wrapped under: no tenant key ever has it. */
export const PROBE_CONTEXT = "tessera:master-key-probe:v1";

/** How often an unavailable provider is tried again (its probe unwrapped), and what Retry-After says. */
export const RETRY_SECONDS = 5;

/** A tenant key wrapped at start and unwrapped to tell whether the provider answers. */
export interface Probe {
  readonly key: Buffer;
  readonly wrapped: Buffer;
}

/**
 * `available`: the provider answered its last call. `unavailable`: it did not; keys unwrapped within the cache's
 * lifetime still serve, and the provider is tried again every RETRY_SECONDS.
 */
export type ProviderState = "available" | "unavailable";

export interface CustodyStatus {
  readonly state: ProviderState;
  /** Unwrapped tenant keys held now, none of them older than the cache's lifetime. */
  readonly cachedKeys: number;
}

/** The master key as the rest of the server uses it: the provider behind a cache of what it unwrapped. */
export interface MasterKeyCustody extends KeyWrapper {
  readonly provider: MasterKeyProvider;
  status(): CustodyStatus;
  close(): Promise<void>;
}

/**
 * The provider failed while serving: 503 with Retry-After. A subclass, so that the CLI's commands (which open the
 * vault without HTTP) can tell it apart (packages/cli/src/commands/server.ts).
 */
export class MasterKeyUnavailableError extends AppError {
  constructor(cause: unknown) {
    super(
      "master-key-unavailable",
      "The vault's master key cannot be reached; only keys it unwrapped recently can be used. Retry after " +
        `${RETRY_SECONDS} s.`,
    );
    this.name = "MasterKeyUnavailableError";
    this.cause = cause;
    this.retryAfterSeconds = RETRY_SECONDS;
  }
}

interface Entry {
  readonly key: Buffer;
  /** When the provider last unwrapped (or wrapped) it. */
  confirmedAt: number;
}

/**
 * Unwrapped tenant keys are kept for `ttlMs` after the provider last confirmed them (docs/keys.md#caching-and-outages), so a
 * request never waits on the HSM or KMS for a key in use: a key used in the second half of its lifetime is
 * unwrapped again in the background, and the request goes on with the cached one. A key not used for `ttlMs` is
 * dropped, so a key revoked at the KMS stops working within `ttlMs`, and an idle tenant's keys leave memory.
 *
 * While the provider does not answer, cached keys keep serving until their lifetime ends, everything else fails
 * with MasterKeyUnavailableError (503), and the state says so (GET /readyz).
 */
export function createMasterKeyCustody(
  provider: MasterKeyProvider,
  deps: { probe: Probe; ttlMs: number; clock: Clock; log: Logger },
): MasterKeyCustody {
  const { probe, ttlMs, clock, log } = deps;
  const cache = new Map<string, Entry>();
  const inFlight = new Map<string, Promise<Buffer>>();
  let state: ProviderState = "available";
  let retry: NodeJS.Timeout | undefined;
  let checking: Promise<boolean> | undefined;
  const now = () => clock.now().getTime();
  const idOf = (wrapped: Buffer, context: string) => `${context}\n${wrapped.toString("base64")}`;

  const sweep = setInterval(
    () => {
      const t = now();
      for (const [id, entry] of cache) if (t - entry.confirmedAt >= ttlMs) cache.delete(id);
    },
    Math.min(ttlMs, 60_000),
  );
  sweep.unref();

  function markAvailable(): void {
    if (state === "available") return;
    state = "available";
    clearInterval(retry);
    retry = undefined;
    log.info(
      { provider: provider.name, key_version: provider.keyVersion },
      "master key provider answers again",
    );
  }

  function markUnavailable(error: unknown): void {
    if (state === "unavailable") return;
    state = "unavailable";
    // The provider's own message (module, token, command, return value, a scrubbed line of stderr), which names
    // no key and no PIN: this line is how an operator learns why.
    log.warn(
      {
        provider: provider.name,
        key_version: provider.keyVersion,
        reason: error instanceof Error ? error.message : String(error),
      },
      "master key provider unavailable: serving only the tenant keys it unwrapped recently",
    );
    retry = setInterval(() => void check(), RETRY_SECONDS * 1000);
    retry.unref();
  }

  /** Whether the provider answers: it unwraps the probe. One check at a time. */
  function check(): Promise<boolean> {
    checking ??= provider
      .unwrap(probe.wrapped, PROBE_CONTEXT)
      .then(
        (key) => {
          if (!key.equals(probe.key)) throw new Error("the provider unwrapped the probe to another key");
          markAvailable();
          return true;
        },
        (error: unknown) => {
          markUnavailable(error);
          return false;
        },
      )
      .finally(() => (checking = undefined));
    return checking;
  }

  /**
   * What a failed unwrap means. A DecryptionError is the wrapped key's fault; a MasterKeyProviderError the
   * provider's. Anything else (a KMS command's non-zero exit, a token's CKR_GENERAL_ERROR) could be either: the
   * probe decides, unless the provider is already known to be down.
   */
  async function explain(error: unknown): Promise<Error> {
    if (error instanceof DecryptionError) return error;
    if (!(error instanceof MasterKeyProviderError) && state === "available" && (await check())) {
      return new DecryptionError();
    }
    markUnavailable(error);
    return new MasterKeyUnavailableError(error);
  }

  function load(id: string, wrapped: Buffer, context: string, version?: string | null): Promise<Buffer> {
    const pending = inFlight.get(id);
    if (pending !== undefined) return pending;
    const started = provider
      .unwrap(wrapped, context, version)
      .then(
        (key) => {
          const existing = cache.get(id);
          if (existing !== undefined && existing.key.equals(key)) existing.confirmedAt = now();
          else cache.set(id, { key, confirmedAt: now() });
          markAvailable();
          return key;
        },
        async (error: unknown) => {
          const explained = await explain(error);
          // A key the provider no longer opens (its KMS key replaced, say) is not served from memory either.
          if (explained instanceof DecryptionError) cache.delete(id);
          throw explained;
        },
      )
      .finally(() => inFlight.delete(id));
    inFlight.set(id, started);
    return started;
  }

  return {
    provider,
    keyVersion: provider.keyVersion,
    async wrap(key, context) {
      let wrapped: Buffer;
      try {
        wrapped = await provider.wrap(key, context);
      } catch (error) {
        // A wrap has no input to blame: any failure is the provider's.
        markUnavailable(error);
        throw new MasterKeyUnavailableError(error);
      }
      markAvailable();
      // The key was just in hand: its first use needs no unwrap.
      cache.set(idOf(wrapped, context), { key: Buffer.from(key), confirmedAt: now() });
      return wrapped;
    },
    async unwrap(wrapped, context, version) {
      const id = idOf(wrapped, context);
      const entry = cache.get(id);
      if (entry !== undefined) {
        const age = now() - entry.confirmedAt;
        if (age < ttlMs) {
          if (age >= ttlMs / 2 && state === "available" && !inFlight.has(id)) {
            // Refreshed in the background; a failure is already recorded in the state, and the cached key serves
            // until its lifetime ends.
            load(id, wrapped, context, version).catch(() => undefined);
          }
          return entry.key;
        }
        cache.delete(id);
      }
      return load(id, wrapped, context, version);
    },
    status() {
      const t = now();
      let cachedKeys = 0;
      for (const entry of cache.values()) if (t - entry.confirmedAt < ttlMs) cachedKeys += 1;
      return { state, cachedKeys };
    },
    async close() {
      clearInterval(sweep);
      clearInterval(retry);
      cache.clear();
      await provider.close();
    },
  };
}
