import type { Kysely } from "kysely";

// Frozen in time: a migration never imports application code, so later refactors cannot change history.
//
// Key custody (docs/keys.md). `tenant_keys.master_key_version` names the master key that wrapped each row (a
// provider's key version: `raw:<check value>`, `pkcs11:<token>/<label>`, `command:<key id>`), so that instances
// configured with two master keys during a rotation unwrap each row with the right one, and `tessera keys
// rotate-master` knows what is left to re-wrap. Rows written before this migration hold null: the master key the
// store was made with. `tenants.shredded_at` marks a tenant whose keys were destroyed (DELETE /tenants/{id}).
export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable("tenant_keys").addColumn("master_key_version", "text").execute();
  await db.schema.alterTable("tenants").addColumn("shredded_at", "text").execute();
}
