/** Sessions (docs/sessions.md#configuration). */
export interface SessionSettings {
  /** How long a session lives from its creation, unless its authorization says otherwise. */
  readonly ttlMs: number;
  /** The latest `expires_at` an authorization may give, counted from the session's creation. */
  readonly maxTtlMs: number;
}
