import type { ListLogsInput, TokenType } from "@tessera/sdk";

// Closed lists of the server that the console offers in its pickers. The SDK's generated OpenAPI types name their
// members, but as types, with nothing to list at run time, and the browser bundle cannot import the server:
// test/catalogs.test.ts holds each copy equal to the server's list.

export type AuditAction = NonNullable<ListLogsInput["action"]>;

/** What the audit log records (server/src/audit/types.ts). */
export const AUDIT_ACTIONS: readonly AuditAction[] = [
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
];

/** The types a token may have (server/src/tokens/token-types.ts). */
export const TOKEN_TYPES: readonly TokenType[] = [
  "token",
  "card",
  "bank",
  "card_number",
  "social_security_number",
  "employer_id_number",
  "us_bank_account_number",
  "us_bank_routing_number",
];
