import type { Clock } from "../shared/clock.js";
import type { Keyring, TenantKeyPurpose, WrappedTenantKey } from "../crypto/keyring.js";
import { writeContext, type Executor, type Store, type WriteContext } from "../storage/database.js";
import { keyStore } from "./store.js";

export interface VersionedKey {
  readonly version: number;
  readonly key: Buffer;
}

/** A new tenant's first keys, wrapped before the transaction that creates the tenant opens. */
export interface NewTenantKeys {
  readonly tenantId: string;
  readonly keys: readonly WrappedTenantKey[];
}

/** A key with the time its version was added: a rotation's overlap counts from it. */
export interface DatedKey extends VersionedKey {
  readonly createdAt: string;
}

/**
 * A tenant's keys, the one way every feature reaches them (tokens, reactors, audit, webhooks, idempotency, key
 * rotation): unwrapped, cached, created and added here. `trx`: the transaction the caller holds, through which
 * keys not yet in memory are read; on SQLite, a read through the store itself would wait for it to end.
 */
export interface TenantKeys {
  /** The newest version of a purpose: what new data is written with. */
  current(tenantId: string, purpose: TenantKeyPurpose, trx?: Executor): Promise<VersionedKey>;
  /** A given version, for data written under an older key. */
  version(tenantId: string, purpose: TenantKeyPurpose, version: number, trx?: Executor): Promise<Buffer>;
  /** Every version of a purpose, newest first, read now (not cached): webhook secrets, the audit chain. */
  history(tenantId: string, purpose: TenantKeyPurpose): Promise<DatedKey[]>;
  /**
   * A new tenant's first keys, wrapped now: the master key may be an HSM or a KMS, and a write transaction
   * (SQLite's one writer) should not wait on it.
   */
  prepare(tenantId: string): Promise<NewTenantKeys>;
  /** Stores what `prepare` made, in the transaction that creates the tenant. */
  createFor(trx: Executor, prepared: NewTenantKeys, createdAt: string): Promise<void>;
  /**
   * Adds the next version of a purpose, under the tenant's key lock (PostgreSQL), with `also` in the same
   * transaction (its audit entry); answers the version added.
   */
  addVersion(
    tenantId: string,
    purpose: TenantKeyPurpose,
    also?: (write: WriteContext, version: number) => Promise<void>,
  ): Promise<number>;
  /**
   * The newest version of a purpose, read now, its version 1 made if the tenant has none (tenants created before
   * the purpose existed).
   */
  ensure(tenantId: string, purpose: TenantKeyPurpose): Promise<Buffer>;
  /**
   * Crypto-shredding: deletes every key of the tenant in `trx` (how many there were) and drops them from this
   * instance's cache. Other instances drop theirs within the cache's lifetime; no request reaches them meanwhile,
   * since the tenant's Applications go in the same transaction.
   */
  destroy(trx: Executor, tenantId: string): Promise<number>;
}

/** Every change to a tenant's keys holds this lock, so instances adding a version at once take turns. */
const lockOf = (tenantId: string) => `tessera:keys:${tenantId}`;

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
  store: Pick<Store, "db" | "transaction">;
  keyring: Keyring;
  clock: Clock;
  ttlMs?: number;
}): TenantKeys {
  const ttlMs = deps.ttlMs ?? 30_000;
  const cache = new Map<string, Loaded>();
  const { keyring, clock, store } = deps;

  async function load(tenantId: string, db = store.db): Promise<Loaded> {
    const wrapped = await keyStore(db).all(tenantId);
    const unwrapped = await Promise.all(wrapped.map((k) => keyring.unwrap(tenantId, k)));
    const keys = new Map<string, Buffer>();
    const newest = new Map<TenantKeyPurpose, number>();
    wrapped.forEach((k, i) => {
      keys.set(`${k.purpose}:${k.version}`, unwrapped[i]!);
      newest.set(k.purpose, Math.max(newest.get(k.purpose) ?? 0, k.version));
    });
    const loaded = { at: clock.now().getTime(), keys, newest };
    cache.set(tenantId, loaded);
    return loaded;
  }

  async function fresh(tenantId: string, db?: Executor): Promise<Loaded> {
    const cached = cache.get(tenantId);
    if (cached !== undefined && clock.now().getTime() - cached.at < ttlMs) return cached;
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
    async history(tenantId, purpose) {
      const rows = await keyStore(store.db).of(tenantId, purpose);
      return Promise.all(
        rows.map(async (k) => ({
          version: k.version,
          createdAt: k.createdAt,
          key: await keyring.unwrap(tenantId, k),
        })),
      );
    },
    async prepare(tenantId) {
      return { tenantId, keys: await keyring.newTenantKeys(tenantId) };
    },
    createFor(trx, { tenantId, keys }, createdAt) {
      return keyStore(trx).insert(tenantId, keys, createdAt);
    },
    addVersion(tenantId, purpose, also) {
      return store.transaction(
        async (trx) => {
          const [newest] = await keyStore(trx).of(tenantId, purpose);
          const version = (newest?.version ?? 0) + 1;
          const made = await keyring.newKey(tenantId, purpose, version);
          await keyStore(trx).insert(tenantId, [made], clock.now().toISOString());
          await also?.(writeContext(trx), version);
          return version;
        },
        { lock: lockOf(tenantId) },
      );
    },
    async destroy(trx, tenantId) {
      cache.delete(tenantId);
      return keyStore(trx).destroy(tenantId);
    },
    async ensure(tenantId, purpose) {
      const find = async (db: Executor) => (await keyStore(db).of(tenantId, purpose))[0];
      const existing = await find(store.db);
      if (existing !== undefined) return keyring.unwrap(tenantId, existing);
      return store.transaction(
        async (trx) => {
          // Another instance may have made it while this one waited for the lock.
          const raced = await find(trx);
          if (raced !== undefined) return keyring.unwrap(tenantId, raced);
          const made = await keyring.newKey(tenantId, purpose, 1);
          await keyStore(trx).insert(tenantId, [made], clock.now().toISOString());
          return keyring.unwrap(tenantId, made);
        },
        { lock: lockOf(tenantId) },
      );
    },
  };
}
