/**
 * Table shapes as both engines store them. Timestamps are ISO-8601 UTC text with millisecond precision
 * (`Date#toISOString`), which sorts and compares correctly as text on SQLite and PostgreSQL alike.
 * JSON documents are text for the same reason.
 */
export interface Database {
  tenants: TenantsTable;
  tenant_keys: TenantKeysTable;
  applications: ApplicationsTable;
  tessera_meta: MetaTable;
}

export interface TenantsTable {
  id: string;
  name: string;
  created_by: string | null;
  created_at: string;
}

export interface TenantKeysTable {
  tenant_id: string;
  purpose: string;
  version: number;
  wrapped_key: string;
  created_at: string;
}

export interface ApplicationsTable {
  id: string;
  tenant_id: string;
  name: string;
  type: string;
  key_hash: string;
  permissions: string;
  rules: string;
  created_by: string | null;
  created_at: string;
  modified_by: string | null;
  modified_at: string | null;
  expires_at: string | null;
}

export interface MetaTable {
  key: string;
  value: string;
}
