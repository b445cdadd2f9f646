import { CompiledQuery, type Selectable } from "kysely";
import type { ApplicationType, Permission } from "../access/permissions.js";
import type { AccessRule } from "../access/rules.js";
import { readsThrough, type Executor, type Reads } from "../storage/database.js";
import { versionedCache } from "../storage/versioned-cache.js";
import type { ApplicationsTable } from "../storage/schema.js";
import type { Application } from "../access/principal.js";
import { pageAndCount } from "../storage/page-query.js";

type Row = Selectable<ApplicationsTable>;

/** Applications whose keys are in use; far more than a deployment has, and a few MB at most. */
const KEY_CACHE_SIZE = 10_000;

function fromRow(row: Row): Application {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    name: row.name,
    type: row.type as ApplicationType,
    permissions: JSON.parse(row.permissions) as Permission[],
    rules: JSON.parse(row.rules) as AccessRule[],
    createdBy: row.created_by,
    createdAt: row.created_at,
    modifiedBy: row.modified_by,
    modifiedAt: row.modified_at,
    expiresAt: row.expires_at,
  };
}

export interface ApplicationChanges {
  readonly name: string;
  readonly permissions: readonly Permission[];
  readonly rules: readonly AccessRule[];
  readonly modifiedBy: string;
  readonly modifiedAt: string;
}

/** Every query is scoped by tenant (DESIGN §5.4) except the key lookup, which is how the tenant is found. */
export function applicationStore(
  db: Executor,
  { readOne, configVersion, versions }: Reads = readsThrough(db),
) {
  // Authentication runs this on every request: compiled once, then only its parameter changes.
  const byKeyHash = db.selectFrom("applications").selectAll().where("key_hash", "=", "").compile();
  const byKeyHashCached = versionedCache<Application>(configVersion, KEY_CACHE_SIZE);

  return {
    async insert(app: Application, keyHash: string): Promise<void> {
      await db
        .insertInto("applications")
        .values({
          id: app.id,
          tenant_id: app.tenantId,
          name: app.name,
          type: app.type,
          key_hash: keyHash,
          permissions: JSON.stringify(app.permissions),
          rules: JSON.stringify(app.rules),
          created_by: app.createdBy,
          created_at: app.createdAt,
          modified_by: app.modifiedBy,
          modified_at: app.modifiedAt,
          expires_at: app.expiresAt,
        })
        .execute();
    },

    /** Current when `at` is the store's configuration version read just before (versioned-cache.ts). */
    findByKeyHash(keyHash: string, at?: number): Promise<Application | undefined> {
      return byKeyHashCached(
        keyHash,
        async () => {
          const row = await readOne<Row>(CompiledQuery.raw(byKeyHash.sql, [keyHash]));
          return row && fromRow(row);
        },
        at,
      );
    },

    versions,

    async findById(tenantId: string, id: string): Promise<Application | undefined> {
      const row = await db
        .selectFrom("applications")
        .selectAll()
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .executeTakeFirst();
      return row && fromRow(row);
    },

    /** Expired Applications are left out from `now` on, as authentication refuses them, whether swept or not. */
    async list(
      tenantId: string,
      filter: { ids: readonly string[]; now: string; offset: number; limit: number },
    ): Promise<{ items: Application[]; total: number }> {
      let query = db
        .selectFrom("applications")
        .where("tenant_id", "=", tenantId)
        .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", filter.now)]));
      if (filter.ids.length > 0) query = query.where("id", "in", filter.ids);
      const { rows, total } = await pageAndCount(
        query,
        (q) => q.selectAll().orderBy("created_at").orderBy("id"),
        filter,
      );
      return { items: rows.map(fromRow), total };
    },

    async update(tenantId: string, id: string, changes: ApplicationChanges): Promise<boolean> {
      const result = await db
        .updateTable("applications")
        .set({
          name: changes.name,
          permissions: JSON.stringify(changes.permissions),
          rules: JSON.stringify(changes.rules),
          modified_by: changes.modifiedBy,
          modified_at: changes.modifiedAt,
        })
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    async replaceKeyHash(
      tenantId: string,
      id: string,
      keyHash: string,
      modified: { by: string; at: string },
    ): Promise<boolean> {
      const result = await db
        .updateTable("applications")
        .set({ key_hash: keyHash, modified_by: modified.by, modified_at: modified.at })
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    /** An expired Application is already gone for the API (the sweeper deletes it): false, as for a missing one. */
    async delete(tenantId: string, id: string, now: string): Promise<boolean> {
      const result = await db
        .deleteFrom("applications")
        .where("tenant_id", "=", tenantId)
        .where("id", "=", id)
        .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", now)]))
        .executeTakeFirst();
      return result.numDeletedRows > 0n;
    },

    async deleteExpired(now: string): Promise<number> {
      const result = await db.deleteFrom("applications").where("expires_at", "<=", now).executeTakeFirst();
      return Number(result.numDeletedRows);
    },
  };
}

export type ApplicationStore = ReturnType<typeof applicationStore>;
