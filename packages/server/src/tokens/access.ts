import { isDeepStrictEqual } from "node:util";
import { decide, mayWriteInto, widenedBy, type Decision, type TokenSubject } from "../access/decide.js";
import type { TokenPermission } from "../access/permissions.js";
import { granteeOf, type Principal } from "../access/principal.js";
import { AppError } from "../server/errors.js";
import type { Shaping } from "./draft.js";
import { tokenTypeSpec } from "./token-types.js";
import type { TokenRecord } from "./types.js";

/** The caller's deciding rule for `permission` on a token it found; outside every rule it is not found. */
export function decideOrNotFound(
  principal: Principal,
  permission: TokenPermission,
  token: TokenRecord,
): Decision {
  const decision = decide(granteeOf(principal), permission, token);
  // Outside every rule for the permission is the same as absent: the caller learns nothing (DESIGN §5.4).
  if (decision === undefined) throw AppError.notFound(`Token ${token.id}`);
  return decision;
}

export function assertMayWrite(
  principal: Principal,
  permission: "token:create" | "token:update",
  token: TokenSubject,
): void {
  if (!mayWriteInto(granteeOf(principal), permission, token)) {
    throw AppError.forbidden(
      `The Application holds no ${permission} rule for every container of this token.`,
    );
  }
}

/**
 * `token:update` must never amount to `token:read` (issue 15). Masks, search indexes and fingerprint expressions
 * are evaluated over the data, and their results are shown (a mask), searchable (an index: `data:` terms guess
 * at it) or compared (a fingerprint); so changing one is for a caller that may read the token revealed anyway.
 * Moving the token is refused when the caller itself would then see more of it. The caller may update the token,
 * so it knows the token exists: 403, not 404.
 */
export function assertUpdateShowsNothing(principal: Principal, before: TokenRecord, after: Shaping): void {
  const read = decide(granteeOf(principal), "token:read", before);
  if (read?.transform === "reveal") return;
  const spec = tokenTypeSpec(before.type);
  const changed = [
    !isDeepStrictEqual(before.mask, after.mask) && "mask",
    !isDeepStrictEqual(before.searchIndexes, after.searchIndexes) && "search_indexes",
    (before.fingerprintExpression ?? spec.fingerprintExpression) !== after.fingerprintExpression &&
      "fingerprint_expression",
  ].filter((field) => field !== false);
  if (changed.length > 0) {
    throw AppError.forbidden(
      `Changing ${changed.join(", ")} needs token:read through a rule that reveals this token: ` +
        "these expressions are evaluated over its data.",
    );
  }
  const widened = widenedBy(granteeOf(principal), before, { id: before.id, containers: after.containers });
  if (widened.length > 0) {
    throw AppError.forbidden(
      `Moving this token to these containers would show the Application more of it through ${widened.join(", ")}; ` +
        "that needs token:read through a rule that reveals it.",
    );
  }
}
