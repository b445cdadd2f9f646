import type { Clock } from "../clock.js";
import type { AuditRecorder } from "../audit/recorder.js";
import type { Keyring } from "../crypto/keyring.js";
import { openConfigurationBytes, sealConfigurationBytes } from "../reactors/sealing.js";
import { reactorStore } from "../reactors/store.js";
import type { Store } from "../storage/database.js";
import { createTenantKeys, type VersionedKey } from "../tenants/keys.js";
import { tenantStore } from "../tenants/store.js";
import { openBytes, sealBytes } from "../tokens/sealing.js";
import { tokenStore } from "../tokens/store.js";

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
  audit,
}: {
  store: Store;
  keyring: Keyring;
  /** Absent where nothing is recorded (tests of the key machinery). */
  audit?: AuditRecorder;
  clock: Clock;
}) {
  const keys = createTenantKeys({ db: store.db, keyring, clock, ttlMs: 0 });

  async function rewrapReactors(tenantId: string, target: VersionedKey, batchSize: number): Promise<void> {
    for (;;) {
      const batch = await reactorStore(store.db).listSealedBefore(tenantId, target.version, batchSize);
      if (batch.length === 0) return;
      const resealings = await Promise.all(
        batch.map(async ({ record, sealed }) => {
          const old = await keys.version(tenantId, "data", sealed.keyVersion);
          const plaintext = openConfigurationBytes(old, tenantId, record.id, sealed);
          return {
            id: record.id,
            from: sealed,
            to: sealConfigurationBytes(target, tenantId, record.id, plaintext),
          };
        }),
      );
      await store.transaction(async (trx) => {
        for (const { id, from, to } of resealings) await reactorStore(trx).reseal(tenantId, id, from, to);
      });
    }
  }

  return {
    async rotate(tenantIds?: readonly string[]): Promise<{ tenantId: string; version: number }[]> {
      const known = await tenantStore(store.db).ids();
      const unknown = (tenantIds ?? []).filter((id) => !known.includes(id));
      // Checked before anything changes, so a typo does not leave some tenants rotated and others not.
      if (unknown.length > 0) throw new UnknownTenantError(unknown);
      const targets = tenantIds ?? known;
      const rotated = [];
      for (const tenantId of targets) {
        const version = await store.transaction(
          async (trx) => {
            const current = Math.max(
              0,
              ...(await tenantStore(trx).keys(tenantId))
                .filter((k) => k.purpose === "data")
                .map((k) => k.version),
            );
            await tenantStore(trx).addKey(
              tenantId,
              await keyring.newKey(tenantId, "data", current + 1),
              clock.now().toISOString(),
            );
            // Run from the command line: Tessera itself acts, so there is no actor.
            await audit?.within(trx, [
              {
                tenantId,
                actorId: null,
                action: "tenant.rotate_data_key",
                entityType: "tenant",
                entityId: tenantId,
                details: { version: current + 1 },
              },
            ]);
            return current + 1;
          },
          { lock: `tessera:keys:${tenantId}` },
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
      for (const tenantId of await tenantStore(store.db).ids()) {
        const target = await keys.current(tenantId, "data");
        await rewrapReactors(tenantId, target, options.batchSize);
        const total = await tokenStore(store.db).countSealedBefore(tenantId, target.version);
        let done = 0;
        options.onProgress?.({ tenantId, done, total });
        for (;;) {
          const batch = await tokenStore(store.db).listSealedBefore(
            tenantId,
            target.version,
            options.batchSize,
          );
          if (batch.length === 0) break;
          const resealings = await Promise.all(
            batch.map(async ({ record, sealed }) => {
              const old = await keys.version(tenantId, "data", sealed.keyVersion);
              const plaintext = openBytes(old, tenantId, record.id, sealed);
              return { id: record.id, from: sealed, to: sealBytes(target, tenantId, record.id, plaintext) };
            }),
          );
          await store.transaction(async (trx) => {
            for (const { id, from, to } of resealings) {
              if (await tokenStore(trx).reseal(tenantId, id, from, to)) resealed += 1;
            }
          });
          done = Math.min(total, done + batch.length);
          options.onProgress?.({ tenantId, done, total });
        }
      }
      return resealed;
    },
  };
}

export type KeyRotation = ReturnType<typeof createKeyRotation>;
