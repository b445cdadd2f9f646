import type { Clock } from "../clock.js";
import type { Keyring, TenantKeyPurpose } from "../crypto/keyring.js";
import type { Executor } from "../storage/database.js";
import { tenantStore } from "./store.js";

export interface VersionedKey {
  readonly version: number;
  readonly key: Buffer;
}

/**
 * A tenant's unwrapped keys, as the token services need them. `trx`: the transaction the caller holds, through
 * which keys not yet in memory are read; on SQLite, a read through the store itself would wait for it to end.
 */
export interface TenantKeys {
  /** The newest version of a purpose: what new data is written with. */
  current(tenantId: string, purpose: TenantKeyPurpose, trx?: Executor): Promise<VersionedKey>;
  /** A given version, for data written under an older key. */
  version(tenantId: string, purpose: TenantKeyPurpose, version: number, trx?: Executor): Promise<Buffer>;
}

interface Loaded {
  readonly at: number;
  readonly keys: Map<string, Buffer>;
  readonly newest: Map<TenantKeyPurpose, number>;
}

/**
 * Unwrapping on every request would cost an AES-GCM decryption and a query, so keys are cached per tenant. Key
 * versions never change once written, so only "which version is newest" can go stale: the cache is reloaded
 * after `ttlMs` and whenever an unknown version is asked for, so another instance's `keys rotate` is picked up
 * within `ttlMs` and data written by it is readable at once.
 */
export function createTenantKeys(deps: {
  db: Executor;
  keyring: Keyring;
  clock: Clock;
  ttlMs?: number;
}): TenantKeys {
  const ttlMs = deps.ttlMs ?? 30_000;
  const cache = new Map<string, Loaded>();

  async function load(tenantId: string, db = deps.db): Promise<Loaded> {
    const wrapped = await tenantStore(db).keys(tenantId);
    const unwrapped = await Promise.all(wrapped.map((k) => deps.keyring.unwrap(tenantId, k)));
    const keys = new Map<string, Buffer>();
    const newest = new Map<TenantKeyPurpose, number>();
    wrapped.forEach((k, i) => {
      keys.set(`${k.purpose}:${k.version}`, unwrapped[i]!);
      newest.set(k.purpose, Math.max(newest.get(k.purpose) ?? 0, k.version));
    });
    const loaded = { at: deps.clock.now().getTime(), keys, newest };
    cache.set(tenantId, loaded);
    return loaded;
  }

  async function fresh(tenantId: string, db?: Executor): Promise<Loaded> {
    const cached = cache.get(tenantId);
    if (cached !== undefined && deps.clock.now().getTime() - cached.at < ttlMs) return cached;
    return load(tenantId, db);
  }

  return {
    async current(tenantId, purpose, trx) {
      const loaded = await fresh(tenantId, trx);
      const version = loaded.newest.get(purpose);
      const key = version === undefined ? undefined : loaded.keys.get(`${purpose}:${version}`);
      if (version === undefined || key === undefined) throw new Error(`tenant has no ${purpose} key`);
      return { version, key };
    },
    async version(tenantId, purpose, version, trx) {
      const id = `${purpose}:${version}`;
      const key = (await fresh(tenantId, trx)).keys.get(id) ?? (await load(tenantId, trx)).keys.get(id);
      if (key === undefined) throw new Error(`tenant has no ${purpose} key version ${version}`);
      return key;
    },
  };
}
