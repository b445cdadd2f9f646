import type { Executor } from "../storage/database.js";
import type { Tenant } from "./types.js";

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

    async findById(id: string): Promise<Tenant | undefined> {
      const row = await db.selectFrom("tenants").selectAll().where("id", "=", id).executeTakeFirst();
      return row && { id: row.id, name: row.name, createdBy: row.created_by, createdAt: row.created_at };
    },

    async exists(): Promise<boolean> {
      return (await db.selectFrom("tenants").select("id").limit(1).executeTakeFirst()) !== undefined;
    },

    async ids(): Promise<string[]> {
      const rows = await db.selectFrom("tenants").select("id").orderBy("created_at").execute();
      return rows.map((r) => r.id);
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
