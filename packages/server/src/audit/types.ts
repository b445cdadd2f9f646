/** What is recorded: `<entity>.<verb>`, a closed list so that filters and reports can rely on it. */
export const AUDIT_ACTIONS = [
  "token.create",
  "token.read",
  "token.list",
  "token.update",
  "token.delete",
  "token.search",
  "token.detokenize",
  "token.explain",
  "reactor.create",
  "reactor.update",
  "reactor.delete",
  "reactor.react",
  "reactor.react_async",
  "application.create",
  "application.update",
  "application.regenerate_key",
  "application.delete",
  "tenant.create",
  "tenant.rotate_data_key",
  "tenant.rotate_master_key",
  "tenant.shred",
  "webhook.rotate_secret",
  "session.create",
  "session.authorize",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export const AUDIT_ENTITY_TYPES = [
  "token",
  "reactor",
  "application",
  "tenant",
  "webhook_secret",
  "session",
] as const;
export type AuditEntityType = (typeof AUDIT_ENTITY_TYPES)[number];

/** The access rule that decided, as the log shows it: enough to find it, nothing of the data. */
export interface AuditRule {
  readonly container: string;
  readonly priority: number;
  readonly transform: string;
}

/** One action to record. `details` may hold ids, counts and query shapes; never token data, keys or secrets. */
export interface AuditEntry {
  readonly tenantId: string;
  /** The acting Application; null for Tessera itself (the command line, sweepers). */
  readonly actorId: string | null;
  readonly action: AuditAction;
  readonly entityType: AuditEntityType;
  readonly entityId: string | null;
  readonly rule?: AuditRule;
  readonly details?: Readonly<Record<string, unknown>>;
  readonly requestId?: string;
}

/** An entry as stored, with its place in the chain once sealed. */
export interface AuditRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly occurredAt: string;
  readonly actorId: string | null;
  readonly action: string;
  readonly entityType: string;
  readonly entityId: string | null;
  /** As stored: JSON text, or null. */
  readonly rule: string | null;
  readonly details: string | null;
  readonly requestId: string | null;
  readonly seq: number | null;
  readonly hash: string | null;
}
