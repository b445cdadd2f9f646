import type { Resealable } from "../keys/rotation.js";
import type { Executor } from "../storage/database.js";
import { openBytes, sealBytes } from "./sealing.js";
import { tokenStore } from "./store.js";
import type { SealedData } from "./types.js";

/** Tokens' data, as `keys rewrap` re-encrypts it under the newest data key (keys/rotation.ts). */
export const tokenResealing: Resealable<SealedData> & {
  countBefore(db: Executor, tenantId: string, version: number): Promise<number>;
} = {
  countBefore: (db, tenantId, version) => tokenStore(db).countSealedBefore(tenantId, version),
  listBefore: async (db, tenantId, version, limit) =>
    (await tokenStore(db).listSealedBefore(tenantId, version, limit)).map(({ record, sealed }) => ({
      id: record.id,
      sealed,
    })),
  reseal: (old, target, tenantId, id, sealed) =>
    sealBytes(target, tenantId, id, openBytes(old, tenantId, id, sealed)),
  replace: (trx, tenantId, id, from, to) => tokenStore(trx).reseal(tenantId, id, from, to),
};
