import type { Decision } from "../access/decide.js";
import type { Principal } from "../access/principal.js";
import { auditEntry } from "../audit/entry.js";
import type { AuditAction, AuditEntry } from "../audit/types.js";
import type { TokenRecord } from "./types.js";

/**
 * The one way token operations describe themselves to the audit log: the action on a token (or on tokens, `id`
 * null), the rule that decided it, and details that hold ids, counts and query shapes, never data.
 */
export function tokenEntry(
  principal: Principal,
  action: AuditAction,
  id: string | null,
  extra: { decision?: Decision | undefined; details?: Record<string, unknown> } = {},
): AuditEntry {
  const { decision, details } = extra;
  return auditEntry(
    principal,
    action,
    { type: "token", id },
    {
      // For a session, the authorizing Application's rule: the container rule that bounds where it reached.
      ...(decision !== undefined && {
        rule: {
          container: (decision.ceiling ?? decision).rule.container ?? "/",
          priority: (decision.ceiling ?? decision).rule.priority,
          transform: decision.transform,
        },
      }),
      ...(details !== undefined && { details }),
    },
  );
}

/** Which tokens a read showed, and how: ids and transforms, never data. */
export function shownTokens(views: readonly { record: TokenRecord; decision?: Decision }[]) {
  return views.map(({ record, decision }) => ({
    id: record.id,
    ...(decision !== undefined && {
      transform: decision.transform,
      container: (decision.ceiling ?? decision).rule.container ?? "/",
    }),
  }));
}
