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
  token_data_index: TokenDataIndexTable;
  token_metadata_index: TokenMetadataIndexTable;
  token_container_index: TokenContainerIndexTable;
  reactors: ReactorsTable;
  reactor_invocations: ReactorInvocationsTable;
  webhook_delivery_attempts: WebhookDeliveryAttemptsTable;
  webhook_destinations: WebhookDestinationsTable;
  audit_log: AuditLogTable;
  idempotency_keys: IdempotencyKeysTable;
  sessions: SessionsTable;
}

/** Sessions (migration 0012): keys and nonces as SHA-256 only; the grant as JSON once authorized. */
export interface SessionsTable {
  id: string;
  tenant_id: string;
  key_hash: string;
  nonce_hash: string;
  created_by: string;
  created_at: string;
  expires_at: string;
  authorized_by: string | null;
  authorized_at: string | null;
  permissions: string | null;
  rules: string | null;
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
  /** JSON: the index expressions (their HMACed values live in token_data_index). */
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

/**
 * What every search index row repeats from its token: the order of results (created_at, then id) is the tail of
 * each index key, and type and expiry let a search filter and count without visiting the token (DESIGN §7).
 */
export interface IndexedTokenColumns {
  created_at: string;
  token_id: string;
  type: string;
  expires_at: string | null;
}

export interface TokenDataIndexTable extends IndexedTokenColumns {
  tenant_id: string;
  /** HMAC of the case-folded evaluated index value under the tenant's index key. */
  blind_value: string;
}

export interface TokenMetadataIndexTable extends IndexedTokenColumns {
  tenant_id: string;
  key: string;
  /** Case-folded for the spec's case-insensitive exact metadata match. */
  value_folded: string;
}

/**
 * One row per path a token's containers lie under (`/pci/high/` gives `/pci/` and `/pci/high/`), the root
 * excepted: a subtree search or an access rule is then one equality lookup.
 */
export interface TokenContainerIndexTable extends IndexedTokenColumns {
  tenant_id: string;
  path: string;
  /** 1 when the path is one of the token's containers itself, 0 when it only lies above one. */
  exact: number;
}

export interface TenantsTable {
  id: string;
  name: string;
  created_by: string | null;
  created_at: string;
  /** When its keys were destroyed (DELETE /tenants/{id}); null for a live tenant. Since migration 0012. */
  shredded_at: string | null;
}

export interface TenantKeysTable {
  tenant_id: string;
  purpose: string;
  version: number;
  wrapped_key: string;
  created_at: string;
  /** The master key that wrapped it (a provider's key version); null before migration 0012. */
  master_key_version: string | null;
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

export interface ReactorsTable {
  id: string;
  tenant_id: string;
  name: string;
  /** `name` case-folded (NFKC, lower case) for the name filter. */
  name_folded: string;
  code: string;
  /** base64 of AES-256-GCM output of the configuration's JSON; the AAD binds tenant and reactor id. */
  configuration: string;
  key_version: number;
  /** Set to null when the Application is deleted. */
  application_id: string | null;
  /** Grows by one with every update; workers are keyed by id and version. */
  version: number;
  created_by: string | null;
  created_at: string;
  modified_by: string | null;
  modified_at: string | null;
}

export interface ReactorInvocationsTable {
  id: string;
  tenant_id: string;
  reactor_id: string;
  requested_by: string;
  callback_url: string;
  /** The callback URL's scheme, host and port (`https://hooks.example.com:443`); null only in rows an older
   * version wrote while this one was being rolled out. */
  destination: string | null;
  timeout_ms: number;
  /** pending, running, completed or failed. */
  status: string;
  run_attempts: number;
  /** When a pending run may start; for a running one, when its lease ends. */
  run_after: string;
  run_owner: string | null;
  /** base64 of AES-256-GCM output of the detokenized args' JSON; null once the run has ended. */
  args: string | null;
  /** base64 of AES-256-GCM output of the outcome's JSON; null until the run ends. */
  outcome: string | null;
  key_version: number;
  /** null until the run ends; then pending, delivered or failed. */
  delivery_status: string | null;
  delivery_attempts: number;
  /** When the next delivery attempt may start; while one is under way, when its lease ends. */
  deliver_after: string | null;
  delivery_owner: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  delivered_at: string | null;
}

export interface WebhookDeliveryAttemptsTable {
  invocation_id: string;
  attempt: number;
  attempted_at: string;
  duration_ms: number;
  response_status: number | null;
  error: string | null;
}

export interface AuditLogTable {
  id: string;
  tenant_id: string;
  occurred_at: string;
  actor_id: string | null;
  action: string;
  entity_type: string;
  entity_id: string | null;
  /** JSON of the deciding access rule, or null. */
  rule: string | null;
  /** JSON of the action's details, or null. */
  details: string | null;
  request_id: string | null;
  /** Position in the tenant's chain; null until sealed. */
  seq: number | null;
  /** HMAC over the row and the previous row's hash; null until sealed. */
  hash: string | null;
}

export interface IdempotencyKeysTable {
  tenant_id: string;
  application_id: string;
  key: string;
  request_hash: string;
  /** in_flight or done. */
  state: string;
  response_status: number | null;
  /** base64 of AES-256-GCM output of the stored answer's JSON; null while in flight. */
  response: string | null;
  key_version: number | null;
  created_at: string;
  expires_at: string;
}

/** One row per webhook destination (scheme, host and port): its turn and its pause (migration 0011). */
export interface WebhookDestinationsTable {
  destination: string;
  /** When an attempt to it was last claimed: the destination waiting longest has the next turn. */
  last_claimed_at: string;
  /** Consecutive attempts it did not answer (or answered 429, 502, 503, 504). */
  failures: number;
  /** Until when no attempt to it starts; null when it is not paused. */
  paused_until: string | null;
}
