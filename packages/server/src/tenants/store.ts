import type { TenantKeyPurpose, WrappedTenantKey } from "../crypto/keyring.js";
import type { Executor } from "../storage/database.js";
import type { Tenant } from "./types.js";

export interface StoredTenantKey {
  readonly tenantId: string;
  readonly key: WrappedTenantKey;
}

export function tenantStore(db: Executor) {
  return {
    async insert(tenant: Tenant, keys: readonly WrappedTenantKey[]): Promise<void> {
      await db
        .insertInto("tenants")
        .values({
          id: tenant.id,
          name: tenant.name,
          created_by: tenant.createdBy,
          created_at: tenant.createdAt,
        })
        .execute();
      await db
        .insertInto("tenant_keys")
        .values(
          keys.map((k) => ({
            tenant_id: tenant.id,
            purpose: k.purpose,
            version: k.version,
            wrapped_key: k.wrapped,
            created_at: tenant.createdAt,
          })),
        )
        .execute();
    },

    async findById(id: string): Promise<Tenant | undefined> {
      const row = await db.selectFrom("tenants").selectAll().where("id", "=", id).executeTakeFirst();
      return row && { id: row.id, name: row.name, createdBy: row.created_by, createdAt: row.created_at };
    },

    async exists(): Promise<boolean> {
      return (await db.selectFrom("tenants").select("id").limit(1).executeTakeFirst()) !== undefined;
    },

    /**
     * Any one wrapped key: enough to prove that the configured master key is the one the store was made with.
     * Undefined for a store that holds none, migrated or not: start-up asks before it migrates anything.
     */
    async anyKey(): Promise<StoredTenantKey | undefined> {
      const tables = await db.introspection.getTables();
      if (!tables.some((table) => table.name === "tenant_keys")) return undefined;
      const row = await db.selectFrom("tenant_keys").selectAll().limit(1).executeTakeFirst();
      return (
        row && {
          tenantId: row.tenant_id,
          key: { purpose: row.purpose as TenantKeyPurpose, version: row.version, wrapped: row.wrapped_key },
        }
      );
    },

    async ids(): Promise<string[]> {
      const rows = await db.selectFrom("tenants").select("id").orderBy("created_at").execute();
      return rows.map((r) => r.id);
    },

    async addKey(tenantId: string, key: WrappedTenantKey, createdAt: string): Promise<void> {
      await db
        .insertInto("tenant_keys")
        .values({
          tenant_id: tenantId,
          purpose: key.purpose,
          version: key.version,
          wrapped_key: key.wrapped,
          created_at: createdAt,
        })
        .execute();
    },

    async keys(tenantId: string): Promise<WrappedTenantKey[]> {
      const rows = await db.selectFrom("tenant_keys").selectAll().where("tenant_id", "=", tenantId).execute();
      return rows.map((row) => ({
        purpose: row.purpose as TenantKeyPurpose,
        version: row.version,
        wrapped: row.wrapped_key,
      }));
    },

    /** One purpose's keys, newest first, with the time each was added. */
    async keysOf(
      tenantId: string,
      purpose: TenantKeyPurpose,
    ): Promise<(WrappedTenantKey & { createdAt: string })[]> {
      const rows = await db
        .selectFrom("tenant_keys")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .where("purpose", "=", purpose)
        .orderBy("version", "desc")
        .execute();
      return rows.map((row) => ({
        purpose,
        version: row.version,
        wrapped: row.wrapped_key,
        createdAt: row.created_at,
      }));
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
