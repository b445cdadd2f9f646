import type { Executor } from "../storage/database.js";
import type { Tenant } from "./types.js";

/** The tables a shredded tenant's rows are deleted from (besides its keys). */
const PURGED = ["tokens", "reactor_invocations", "reactors", "idempotency_keys", "applications"] as const;
export type PurgedCounts = Record<(typeof PURGED)[number], number>;

export function tenantStore(db: Executor) {
  return {
    async insert(tenant: Tenant): Promise<void> {
      await db
        .insertInto("tenants")
        .values({
          id: tenant.id,
          name: tenant.name,
          created_by: tenant.createdBy,
          created_at: tenant.createdAt,
        })
        .execute();
    },

    /** A live tenant: a shredded one is gone for every purpose but its audit log. */
    async findById(id: string): Promise<Tenant | undefined> {
      const row = await db
        .selectFrom("tenants")
        .selectAll()
        .where("id", "=", id)
        .where("shredded_at", "is", null)
        .executeTakeFirst();
      return row && { id: row.id, name: row.name, createdBy: row.created_by, createdAt: row.created_at };
    },

    async exists(): Promise<boolean> {
      return (await db.selectFrom("tenants").select("id").limit(1).executeTakeFirst()) !== undefined;
    },

    /** The live tenants: key rotation, audit verification and master key rotation pass shredded ones by. */
    async ids(): Promise<string[]> {
      const rows = await db
        .selectFrom("tenants")
        .select("id")
        .where("shredded_at", "is", null)
        .orderBy("created_at")
        .execute();
      return rows.map((r) => r.id);
    },

    /**
     * Crypto-shredding (docs/keys.md#shredding-a-tenant): deletes everything the tenant holds but its audit log
     * (tokens and their index rows, reactors and their invocations, idempotent answers, Applications) and marks it
     * shredded. The tenant row stays, so that its audit log (which would go with it, by its foreign key) stays
     * too. Answers how many of each there were.
     */
    async purge(id: string, at: string): Promise<PurgedCounts> {
      const counts = { tokens: 0, reactor_invocations: 0, reactors: 0, idempotency_keys: 0, applications: 0 };
      for (const table of PURGED) {
        const result = await db.deleteFrom(table).where("tenant_id", "=", id).executeTakeFirst();
        counts[table] = Number(result.numDeletedRows);
      }
      await db.updateTable("tenants").set({ shredded_at: at }).where("id", "=", id).execute();
      return counts;
    },

    async getMeta(key: string): Promise<string | undefined> {
      const row = await db
        .selectFrom("tessera_meta")
        .select("value")
        .where("key", "=", key)
        .executeTakeFirst();
      return row?.value;
    },

    async setMeta(key: string, value: string): Promise<void> {
      await db
        .insertInto("tessera_meta")
        .values({ key, value })
        .onConflict((oc) => oc.column("key").doUpdateSet({ value }))
        .execute();
    },
  };
}
