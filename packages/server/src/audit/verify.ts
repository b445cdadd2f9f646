import type { Clock } from "../clock.js";
import type { Keyring } from "../crypto/keyring.js";
import type { Store } from "../storage/database.js";
import { tenantStore } from "../tenants/store.js";
import { GENESIS, linkHash } from "./chain.js";
import { auditStore } from "./store.js";

const PAGE = 1_000;
/** Rows left unsealed this long mean no sealer ran (or one failed): reported, since they are not yet protected. */
const STALE_UNSEALED_MS = 5 * 60_000;

export interface ChainReport {
  readonly tenantId: string;
  /** Sealed rows checked. */
  readonly rows: number;
  /** The last link: record it elsewhere to detect a truncated tail later. */
  readonly head: { seq: number; hash: string } | undefined;
  /** Rows recorded but not yet chained, older than a few minutes. */
  readonly staleUnsealed: number;
  /** Each break: where, and what is wrong. Empty when the chain is intact. */
  readonly problems: readonly string[];
}

/**
 * Walks each tenant's chain from its first row and recomputes every link. A row changed after sealing, a row
 * removed (a gap in the numbers) or inserted, or links recomputed without the tenant's audit key break it. Only
 * removing the newest rows cannot be seen from the chain alone: compare `head` with one recorded earlier.
 */
export async function verifyAuditLog(
  store: Pick<Store, "db">,
  keyring: Keyring,
  clock: Clock,
  tenantIds?: readonly string[],
): Promise<ChainReport[]> {
  const audit = auditStore(store.db);
  const reports: ChainReport[] = [];
  for (const tenantId of tenantIds ?? (await tenantStore(store.db).ids())) {
    const problems: string[] = [];
    const [wrapped] = await tenantStore(store.db).keysOf(tenantId, "audit");
    const key = wrapped === undefined ? undefined : await keyring.unwrap(tenantId, wrapped);
    let expected = 1;
    let previous = GENESIS;
    let rows = 0;
    let head: { seq: number; hash: string } | undefined;
    for (;;) {
      const page = await audit.sealedAfter(tenantId, expected - 1, PAGE);
      if (page.length === 0) break;
      if (key === undefined) {
        problems.push("sealed rows exist but the tenant has no audit key");
        break;
      }
      for (const record of page) {
        const seq = record.seq ?? 0;
        // After a gap the previous link is gone: the gap is the finding, not the row that follows it.
        const afterGap = seq !== expected;
        if (afterGap) problems.push(`rows ${expected}–${seq - 1} are missing`);
        if (!afterGap && record.hash !== linkHash(key, previous, record, seq)) {
          problems.push(`row ${seq} (${record.id}) does not match its link: changed, inserted or re-linked`);
        }
        previous = record.hash ?? "";
        head = { seq, hash: previous };
        expected = seq + 1;
        rows += 1;
      }
    }
    const before = new Date(clock.now().getTime() - STALE_UNSEALED_MS).toISOString();
    const staleUnsealed = await audit.countUnsealedBefore(tenantId, before);
    reports.push({ tenantId, rows, head, staleUnsealed, problems });
  }
  return reports;
}
