import type { TenantKeyPurpose, WrappedTenantKey } from "../crypto/keyring.js";
import type { Executor } from "../storage/database.js";

export interface StoredTenantKey {
  readonly tenantId: string;
  readonly key: WrappedTenantKey;
}

/** The tenant_keys rows: every tenant's keys, wrapped by the master key. Only keys/ reads or writes them. */
export function keyStore(db: Executor) {
  return {
    async insert(tenantId: string, keys: readonly WrappedTenantKey[], createdAt: string): Promise<void> {
      await db
        .insertInto("tenant_keys")
        .values(
          keys.map((k) => ({
            tenant_id: tenantId,
            purpose: k.purpose,
            version: k.version,
            wrapped_key: k.wrapped,
            created_at: createdAt,
          })),
        )
        .execute();
    },

    /**
     * Any one wrapped key: enough to prove that the configured master key is the one the store was made with.
     * Undefined for a store that holds none, migrated or not: start-up asks before it migrates anything.
     */
    async any(): Promise<StoredTenantKey | undefined> {
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

    async all(tenantId: string): Promise<WrappedTenantKey[]> {
      const rows = await db.selectFrom("tenant_keys").selectAll().where("tenant_id", "=", tenantId).execute();
      return rows.map((row) => ({
        purpose: row.purpose as TenantKeyPurpose,
        version: row.version,
        wrapped: row.wrapped_key,
      }));
    },

    /** One purpose's keys, newest first, with the time each was added. */
    async of(
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
  };
}
