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
            master_key_version: k.masterKeyVersion ?? null,
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
          key: wrappedOf(row),
        }
      );
    },

    async all(tenantId: string): Promise<WrappedTenantKey[]> {
      const rows = await db.selectFrom("tenant_keys").selectAll().where("tenant_id", "=", tenantId).execute();
      return rows.map(wrappedOf);
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
      return rows.map((row) => ({ ...wrappedOf(row), createdAt: row.created_at }));
    },

    /**
     * One stored key per master key version the rows record (null included): the start-up check unwraps each, so
     * that a master key removed before every row was re-wrapped is named at start, not met by a request.
     */
    async onePerMasterKey(): Promise<StoredTenantKey[]> {
      const tables = await db.introspection.getTables();
      const table = tables.find((each) => each.name === "tenant_keys");
      if (table === undefined) return [];
      if (!table.columns.some((column) => column.name === "master_key_version")) {
        const one = await this.any();
        return one === undefined ? [] : [one];
      }
      const versions = await db.selectFrom("tenant_keys").select("master_key_version").distinct().execute();
      const found: StoredTenantKey[] = [];
      for (const { master_key_version: version } of versions) {
        const row = await db
          .selectFrom("tenant_keys")
          .selectAll()
          .where("master_key_version", version === null ? "is" : "=", version)
          .limit(1)
          .executeTakeFirst();
        if (row !== undefined) found.push({ tenantId: row.tenant_id, key: wrappedOf(row) });
      }
      return found;
    },

    /** How many rows are not recorded as wrapped by `masterKeyVersion` (master key rotation's progress). */
    async countNotWrappedBy(masterKeyVersion: string): Promise<number> {
      const row = await db
        .selectFrom("tenant_keys")
        .select((eb) => eb.fn.countAll<number | string>().as("n"))
        .where((eb) =>
          eb.or([eb("master_key_version", "is", null), eb("master_key_version", "!=", masterKeyVersion)]),
        )
        .executeTakeFirstOrThrow();
      return Number(row.n);
    },

    /** A tenant's rows not recorded as wrapped by `masterKeyVersion`. */
    async notWrappedBy(tenantId: string, masterKeyVersion: string): Promise<WrappedTenantKey[]> {
      const rows = await db
        .selectFrom("tenant_keys")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .where((eb) =>
          eb.or([eb("master_key_version", "is", null), eb("master_key_version", "!=", masterKeyVersion)]),
        )
        .orderBy("purpose")
        .orderBy("version")
        .execute();
      return rows.map(wrappedOf);
    },

    /**
     * Replaces one row's wrapping, unless it changed since `from` was read (another run of the rotation): whether
     * it did. The key itself, and so everything sealed under it, stays the same.
     */
    async rewrap(tenantId: string, from: WrappedTenantKey, to: WrappedTenantKey): Promise<boolean> {
      const result = await db
        .updateTable("tenant_keys")
        .set({ wrapped_key: to.wrapped, master_key_version: to.masterKeyVersion ?? null })
        .where("tenant_id", "=", tenantId)
        .where("purpose", "=", from.purpose)
        .where("version", "=", from.version)
        .where("wrapped_key", "=", from.wrapped)
        .executeTakeFirst();
      return Number(result.numUpdatedRows) === 1;
    },

    /** Destroys every key of a tenant (crypto-shredding): how many rows there were. */
    async destroy(tenantId: string): Promise<number> {
      const result = await db.deleteFrom("tenant_keys").where("tenant_id", "=", tenantId).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

function wrappedOf(row: {
  purpose: string;
  version: number;
  wrapped_key: string;
  master_key_version?: string | null;
}): WrappedTenantKey {
  return {
    purpose: row.purpose as TenantKeyPurpose,
    version: row.version,
    wrapped: row.wrapped_key,
    masterKeyVersion: row.master_key_version ?? null,
  };
}
