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
  tokens: TokensTable;
  token_index_values: TokenIndexValuesTable;
  token_containers: TokenContainersTable;
  token_metadata: TokenMetadataTable;
}

export interface TokensTable {
  tenant_id: string;
  id: string;
  type: string;
  /** base64 of AES-256-GCM output; the AAD binds tenant and token id (DESIGN §5.1). */
  ciphertext: string;
  key_version: number;
  /** HMAC of the evaluated fingerprint expression under the tenant's fingerprint key. */
  fingerprint: string | null;
  fingerprint_expression: string | null;
  /** JSON: the mask expression(s) as given, or null. */
  mask: string | null;
  /** JSON: the index expressions (their HMACed values live in token_index_values). */
  search_indexes: string;
  /** JSON object of strings. */
  metadata: string;
  /** JSON array of lower-cased container paths. */
  containers: string;
  expires_at: string | null;
  created_by: string | null;
  created_at: string;
  modified_by: string | null;
  modified_at: string | null;
}

export interface TokenIndexValuesTable {
  tenant_id: string;
  /** HMAC of the case-folded evaluated index value under the tenant's index key. */
  blind_value: string;
  token_id: string;
}

export interface TokenContainersTable {
  tenant_id: string;
  container: string;
  token_id: string;
}

export interface TokenMetadataTable {
  tenant_id: string;
  key: string;
  /** Case-folded for the spec's case-insensitive exact metadata match. */
  value_folded: string;
  token_id: string;
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
