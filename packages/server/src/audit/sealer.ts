import { setImmediate } from "node:timers/promises";
import type { Logger } from "pino";
import { watchOutages } from "../jobs/outage-watch.js";
import type { TenantKeys } from "../keys/tenant-keys.js";
import type { Store } from "../storage/database.js";
import { GENESIS, linkHash } from "./chain.js";
import { auditStore } from "./store.js";

const BATCH = 500;

/**
 * Chains what was recorded: per tenant, in one transaction (under an advisory lock on PostgreSQL, so that
 * instances sealing at once take turns), the unsealed rows in the order they happened get the next numbers and
 * their HMAC links. Returns how many rows it sealed.
 */
export async function sealAuditLog(
  store: Pick<Store, "db" | "transaction">,
  keys: Pick<TenantKeys, "ensure">,
): Promise<number> {
  let sealed = 0;
  for (const tenantId of await auditStore(store.db).tenantsWithUnsealed()) {
    // Made on first use for tenants created before audit keys existed.
    const key = await keys.ensure(tenantId, "audit");
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
      // better-sqlite3 answers synchronously, so without this a long unsealed tail (or many tenants) would be
      // chained in one stretch of microtasks, no request answered until the end (a million entries: half a
      // minute). Between batches the event loop serves what waited, and writes queued meanwhile take the
      // connection before the next batch.
      await setImmediate();
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
