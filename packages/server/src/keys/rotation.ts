import type { Clock } from "../shared/clock.js";
import type { Keyring } from "../crypto/keyring.js";
import type { Executor, Store, WriteContext } from "../storage/database.js";
import { createTenantKeys, type VersionedKey } from "./tenant-keys.js";

export class UnknownTenantError extends Error {
  constructor(readonly tenantIds: readonly string[]) {
    super(`no such tenant: ${tenantIds.join(", ")}`);
    this.name = "UnknownTenantError";
  }
}

export interface RewrapProgress {
  readonly tenantId: string;
  readonly done: number;
  readonly total: number;
}

/**
 * Rows sealed under a tenant's data key, which rewrap re-encrypts under the newest version. Each feature that
 * seals under the data key offers its rows this way (tokens/resealing.ts, reactors/resealing.ts), so that key
 * rotation knows no feature's tables.
 */
export interface Resealable<Sealed extends { readonly keyVersion: number }> {
  listBefore(
    db: Executor,
    tenantId: string,
    version: number,
    limit: number,
  ): Promise<{ id: string; sealed: Sealed }[]>;
  /** Opened under `old`, sealed again under `target`. */
  reseal(old: Buffer, target: VersionedKey, tenantId: string, id: string, sealed: Sealed): Sealed;
  /** Replaces `from` with `to` unless the row changed meanwhile; whether it did. */
  replace(trx: Executor, tenantId: string, id: string, from: Sealed, to: Sealed): Promise<boolean>;
}

/**
 * Data-key rotation (DESIGN §5.6). `rotate` adds a newer data-key version, which new writes use from then on
 * (within the key cache's lifetime on every instance); reads accept every version. `rewrap` re-encrypts old
 * tokens under the newest version in small transactions, so it runs beside live traffic and can be stopped and
 * restarted at any point: what is left to do is always just "tokens sealed under an older version".
 * Reactor configurations, sealed under the same data keys, are re-encrypted the same way before each tenant's
 * tokens; they are few, so progress and the count returned are about tokens.
 */
export function createKeyRotation({
  store,
  keyring,
  clock,
  tenantIds,
  sealed,
  onRotated,
}: {
  store: Pick<Store, "db" | "transaction">;
  keyring: Keyring;
  clock: Clock;
  /** Every tenant, in the order they were created. */
  tenantIds: () => Promise<string[]>;
  sealed: {
    readonly reactors: Resealable<{ readonly keyVersion: number }>;
    readonly tokens: Resealable<{ readonly keyVersion: number }> & {
      /** How many are sealed under an older version than `version`, for progress. */
      countBefore(db: Executor, tenantId: string, version: number): Promise<number>;
    };
  };
  /** Records the rotation (the audit log), in its transaction; absent in tests of the key machinery. */
  onRotated?: (write: WriteContext, tenantId: string, version: number) => Promise<void>;
}) {
  const keys = createTenantKeys({ store, keyring, clock, ttlMs: 0 });

  /** One batch of `rows` re-encrypted under `target`: how many were, and how many were listed. */
  async function rewrapBatch<S extends { readonly keyVersion: number }>(
    rows: Resealable<S>,
    tenantId: string,
    target: VersionedKey,
    batchSize: number,
  ): Promise<{ listed: number; resealed: number }> {
    const batch = await rows.listBefore(store.db, tenantId, target.version, batchSize);
    const resealings = await Promise.all(
      batch.map(async ({ id, sealed }) => {
        const old = await keys.version(tenantId, "data", sealed.keyVersion);
        return { id, from: sealed, to: rows.reseal(old, target, tenantId, id, sealed) };
      }),
    );
    let resealed = 0;
    await store.transaction(async (trx) => {
      for (const { id, from, to } of resealings) {
        if (await rows.replace(trx, tenantId, id, from, to)) resealed += 1;
      }
    });
    return { listed: batch.length, resealed };
  }

  return {
    async rotate(only?: readonly string[]): Promise<{ tenantId: string; version: number }[]> {
      const known = await tenantIds();
      const unknown = (only ?? []).filter((id) => !known.includes(id));
      // Checked before anything changes, so a typo does not leave some tenants rotated and others not.
      if (unknown.length > 0) throw new UnknownTenantError(unknown);
      const rotated = [];
      for (const tenantId of only ?? known) {
        const version = await keys.addVersion(tenantId, "data", (write, added) =>
          onRotated === undefined ? Promise.resolve() : onRotated(write, tenantId, added),
        );
        rotated.push({ tenantId, version });
      }
      return rotated;
    },

    async rewrap(options: {
      batchSize: number;
      onProgress?: (progress: RewrapProgress) => void;
    }): Promise<number> {
      let resealed = 0;
      for (const tenantId of await tenantIds()) {
        const target = await keys.current(tenantId, "data");
        while ((await rewrapBatch(sealed.reactors, tenantId, target, options.batchSize)).listed > 0);
        const total = await sealed.tokens.countBefore(store.db, tenantId, target.version);
        let done = 0;
        options.onProgress?.({ tenantId, done, total });
        for (;;) {
          const batch = await rewrapBatch(sealed.tokens, tenantId, target, options.batchSize);
          if (batch.listed === 0) break;
          resealed += batch.resealed;
          done = Math.min(total, done + batch.listed);
          options.onProgress?.({ tenantId, done, total });
        }
      }
      return resealed;
    },
  };
}

export type KeyRotation = ReturnType<typeof createKeyRotation>;
