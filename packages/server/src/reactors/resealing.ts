import type { Resealable } from "../keys/rotation.js";
import { openConfigurationBytes, sealConfigurationBytes } from "./sealing.js";
import { reactorStore } from "./store.js";
import type { SealedConfiguration } from "./types.js";

/** Reactors' configurations, as `keys rewrap` re-encrypts them under the newest data key (keys/rotation.ts). */
export const reactorResealing: Resealable<SealedConfiguration> = {
  listBefore: async (db, tenantId, version, limit) =>
    (await reactorStore(db).listSealedBefore(tenantId, version, limit)).map(({ record, sealed }) => ({
      id: record.id,
      sealed,
    })),
  reseal: (old, target, tenantId, id, sealed) =>
    sealConfigurationBytes(target, tenantId, id, openConfigurationBytes(old, tenantId, id, sealed)),
  replace: (trx, tenantId, id, from, to) => reactorStore(trx).reseal(tenantId, id, from, to),
};
