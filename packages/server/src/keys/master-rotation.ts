import { DecryptionError } from "../crypto/cipher.js";
import { tenantKeyContext, type KeyWrapper, type WrappedTenantKey } from "../crypto/keyring.js";
import type { Store, WriteContext } from "../storage/database.js";
import { writeContext } from "../storage/database.js";
import { keyStore } from "./store.js";

export interface MasterRotationProgress {
  /** Tenant key rows re-wrapped so far, and how many were left when the run started. */
  readonly done: number;
  readonly total: number;
}

export interface MasterRotationResult {
  /** Rows this run re-wrapped. */
  readonly rewrapped: number;
  /** Rows still not wrapped by the target: others' writes meanwhile that a further run takes (normally 0). */
  readonly remaining: number;
}

/** A master key to re-wrap under: it wraps, says its version, and can open what it wrapped. */
export type TargetMasterKey = KeyWrapper & { readonly keyVersion: string };

/**
 * Master key rotation (docs/keys.md#rotating-the-master-key): every `tenant_keys` row not recorded as wrapped by
 * `to` is unwrapped by `from` (the configured master key, with the previous one during a rotation) and wrapped
 * again by `to`. The tenant keys themselves do not change, so nothing sealed under them is touched, and instances
 * that can read both master keys keep serving throughout. One tenant at a time: its rows are wrapped before the
 * transaction opens (an HSM or KMS call each), then replaced in one transaction under the tenant's key lock, with
 * the audit entry; a row changed meanwhile is left for the next pass. Stopping at any point loses nothing: what is
 * left is exactly the rows not yet recorded under `to`, which a further run takes.
 */
export function createMasterKeyRotation(deps: {
  store: Pick<Store, "db" | "transaction">;
  from: KeyWrapper;
  tenantIds: () => Promise<string[]>;
  /** Records the re-wrap of a tenant's rows (its audit log), in the transaction that replaces them. */
  onRewrapped?: (
    write: WriteContext,
    tenantId: string,
    details: { readonly from: string[]; readonly to: string; readonly keys: number },
  ) => Promise<void>;
}) {
  const { store, from } = deps;

  async function rewrapOne(
    tenantId: string,
    row: WrappedTenantKey,
    to: TargetMasterKey,
  ): Promise<{ from: WrappedTenantKey; to: WrappedTenantKey }> {
    const context = tenantKeyContext(tenantId, row.purpose, row.version);
    const wrapped = Buffer.from(row.wrapped, "base64");
    let key: Buffer;
    try {
      key = await from.unwrap(wrapped, context, row.masterKeyVersion);
    } catch (error) {
      // A row an earlier, interrupted run wrapped by `to` without recording it cannot happen (both are one
      // update), but a row stored by a bare raw key that is now `to` records no version: `to` opens it.
      if (!(error instanceof DecryptionError)) throw error;
      key = await to.unwrap(wrapped, context);
    }
    const rewrapped: WrappedTenantKey = {
      purpose: row.purpose,
      version: row.version,
      wrapped: (await to.wrap(key, context)).toString("base64"),
      masterKeyVersion: to.keyVersion,
    };
    return { from: row, to: rewrapped };
  }

  async function pass(to: TargetMasterKey, onProgress: (done: number) => void): Promise<number> {
    let done = 0;
    for (const tenantId of await deps.tenantIds()) {
      const rows = await keyStore(store.db).notWrappedBy(tenantId, to.keyVersion);
      if (rows.length === 0) continue;
      const rewraps: { from: WrappedTenantKey; to: WrappedTenantKey }[] = [];
      for (const row of rows) rewraps.push(await rewrapOne(tenantId, row, to));
      done += await store.transaction(
        async (trx) => {
          let replaced = 0;
          for (const each of rewraps)
            if (await keyStore(trx).rewrap(tenantId, each.from, each.to)) replaced += 1;
          if (replaced > 0) {
            await deps.onRewrapped?.(writeContext(trx), tenantId, {
              from: [...new Set(rows.map((row) => row.masterKeyVersion ?? "unrecorded"))].sort(),
              to: to.keyVersion,
              keys: replaced,
            });
          }
          return replaced;
        },
        { lock: `tessera:keys:${tenantId}` },
      );
      onProgress(done);
    }
    return done;
  }

  return {
    /** Rows not yet wrapped by `to`. */
    remaining: (to: TargetMasterKey) => keyStore(store.db).countNotWrappedBy(to.keyVersion),

    async rewrapAll(
      to: TargetMasterKey,
      options: { onProgress?: (progress: MasterRotationProgress) => void } = {},
    ): Promise<MasterRotationResult> {
      const total = await keyStore(store.db).countNotWrappedBy(to.keyVersion);
      let rewrapped = 0;
      options.onProgress?.({ done: 0, total });
      // Passes until nothing is left, or a pass finds nothing to do (rows written meanwhile by instances that still
      // wrap with the old key: the operator is told how many).
      for (;;) {
        const before = rewrapped;
        rewrapped += await pass(to, (done) =>
          options.onProgress?.({ done: Math.min(total, before + done), total }),
        );
        const remaining = await keyStore(store.db).countNotWrappedBy(to.keyVersion);
        if (remaining === 0 || rewrapped === before) return { rewrapped, remaining };
      }
    },
  };
}

export type MasterKeyRotation = ReturnType<typeof createMasterKeyRotation>;
