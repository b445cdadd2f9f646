import type { Logger } from "pino";
import { watchOutages } from "../jobs/outage-watch.js";
import type { Clock } from "../clock.js";
import type { Keyring } from "../crypto/keyring.js";
import type { Store } from "../storage/database.js";
import { tenantStore } from "../tenants/store.js";
import { GENESIS, linkHash } from "./chain.js";
import { auditStore } from "./store.js";

const BATCH = 500;

/** The tenant's audit key, made on first use for tenants created before audit keys existed. */
export async function auditKey(
  store: Pick<Store, "db" | "transaction">,
  keyring: Keyring,
  clock: Clock,
  tenantId: string,
): Promise<Buffer> {
  const find = async (db: Store["db"]) => (await tenantStore(db).keysOf(tenantId, "audit"))[0];
  const existing = await find(store.db);
  if (existing !== undefined) return keyring.unwrap(tenantId, existing);
  return store.transaction(
    async (trx) => {
      // Another instance may have made it while this one waited for the lock.
      const raced = await find(trx);
      if (raced !== undefined) return keyring.unwrap(tenantId, raced);
      const made = await keyring.newKey(tenantId, "audit", 1);
      await tenantStore(trx).addKey(tenantId, made, clock.now().toISOString());
      return keyring.unwrap(tenantId, made);
    },
    { lock: `tessera:keys:${tenantId}` },
  );
}

/**
 * Chains what was recorded: per tenant, in one transaction (under an advisory lock on PostgreSQL, so that
 * instances sealing at once take turns), the unsealed rows in the order they happened get the next numbers and
 * their HMAC links. Returns how many rows it sealed.
 */
export async function sealAuditLog(
  store: Pick<Store, "db" | "transaction">,
  keyring: Keyring,
  clock: Clock,
): Promise<number> {
  let sealed = 0;
  for (const tenantId of await auditStore(store.db).tenantsWithUnsealed()) {
    const key = await auditKey(store, keyring, clock, tenantId);
    for (;;) {
      const count = await store.transaction(
        async (trx) => {
          const audit = auditStore(trx);
          const batch = await audit.unsealed(tenantId, BATCH);
          let { seq, hash } = (await audit.head(tenantId)) ?? { seq: 0, hash: GENESIS };
          const links = batch.map((record) => {
            seq += 1;
            hash = linkHash(key, hash, record, seq);
            return { record, seq, hash };
          });
          await audit.seal(links);
          return batch.length;
        },
        { lock: `tessera:audit:${tenantId}` },
      );
      sealed += count;
      if (count < BATCH) break;
    }
  }
  return sealed;
}

export interface AuditSealer {
  stop(): Promise<void>;
}

/** Seals every `intervalMs`, one pass at a time. */
export function startAuditSealer(
  deps: { seal: () => Promise<number>; log: Pick<Logger, "error" | "warn"> },
  intervalMs: number,
): AuditSealer {
  let running: Promise<void> | undefined;
  let stopped = false;
  const outages = watchOutages("audit sealer", deps.log);
  const sealQuietly = () =>
    deps.seal().then(
      () => outages.succeeded(),
      (err: unknown) => outages.failed(err, "sealing the audit log failed"),
    );

  function pass(): void {
    if (stopped || running !== undefined) return;
    running = sealQuietly().finally(() => {
      running = undefined;
    });
  }

  const timer = setInterval(pass, intervalMs);
  timer.unref();
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
      // What was recorded last is chained before the process goes.
      await sealQuietly();
    },
  };
}
