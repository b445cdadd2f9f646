import { isTokenPermission, type Permission, type TokenPermission } from "./permissions.js";
import type { AccessRule, Transform } from "./rules.js";

export interface Grantee {
  readonly permissions: readonly Permission[];
  readonly rules: readonly AccessRule[];
}

/**
 * Where a rule in precedence order comes from: the Application's own rules (by their index as stored, which is
 * ascending priority) or one of its top-level token permissions, which stands for a rule over every container.
 */
export type RuleOrigin =
  | { readonly kind: "rule"; readonly index: number }
  | { readonly kind: "permission"; readonly permission: TokenPermission };

/** A rule as decisions try it: the rule and where it comes from. */
export interface RankedRule {
  readonly rule: AccessRule;
  readonly origin: RuleOrigin;
}

export interface Decision {
  readonly transform: Transform;
  /** The rule that decided; implicit rules (from top-level permissions) have no description of their own. */
  readonly rule: AccessRule;
  readonly origin: RuleOrigin;
}

/**
 * Why a rule tried before the deciding one did not decide: it has conditions instead of a container (they apply
 * only to session keys), it lacks the permission, or its container covers none of the token's containers.
 */
export type Mismatch = "conditions" | "permission" | "container";

export interface PassedOver {
  readonly ranked: RankedRule;
  readonly reason: Mismatch;
}

/** A decision with its trace: every rule tried before the deciding one (or all of them when none decides). */
export interface Explanation {
  readonly decision: Decision | undefined;
  readonly passedOver: readonly PassedOver[];
}

/** The whole tree: implicit rules from top-level permissions cover every container. */
export const ROOT = "/";

// After Basis Theory (wire-format §4.6): a permission held outside any rule applies everywhere, shown masked,
// except token:use, which exists to hand real values to reactors.
const IMPLICIT_TRANSFORM: Record<TokenPermission, Transform> = {
  "token:create": "mask",
  "token:update": "mask",
  "token:read": "mask",
  "token:search": "mask",
  "token:delete": "mask",
  "token:use": "reveal",
};

/**
 * The rules in the order they are tried: explicit rules by ascending priority, then one implicit rule per
 * top-level token permission over all containers, so explicit rules always take precedence.
 */
export function effectiveRules(grantee: Grantee): RankedRule[] {
  const explicit = grantee.rules
    .map((rule, index): RankedRule => ({ rule, origin: { kind: "rule", index } }))
    .sort((a, b) => a.rule.priority - b.rule.priority);
  const last = explicit.at(-1)?.rule.priority ?? 0;
  const implicit = grantee.permissions.filter(isTokenPermission).map((permission, i): RankedRule => ({
    rule: {
      priority: last + 1 + i,
      container: ROOT,
      transform: IMPLICIT_TRANSFORM[permission],
      permissions: [permission],
    },
    origin: { kind: "permission", permission },
  }));
  return [...explicit, ...implicit];
}

/**
 * A rule's container covers itself and its sub-containers. Both are normalized paths ending in `/`, so a plain
 * prefix test is exact on segment boundaries: `/pci/` covers `/pci/high/` but never `/pcix/`.
 */
export function containerCovers(ruleContainer: string, tokenContainer: string): boolean {
  return tokenContainer.startsWith(ruleContainer);
}

/** The containers of the grantee's rules (explicit and implicit) that hold `permission`: what it may reach. */
export function ruleContainers(grantee: Grantee, permission: TokenPermission): string[] {
  return effectiveRules(grantee)
    .map(({ rule }) => rule)
    .filter((r) => r.container !== undefined && r.permissions.includes(permission))
    .map((r) => r.container as string);
}

/**
 * Every path the containers lie under, the root excepted (it covers everything), mapped to whether it is one of
 * the containers itself. A rule container other than the root covers a token exactly when it is one of these
 * paths, which is how the search index turns rule checks into equality lookups.
 */
export function containerPaths(containers: readonly string[]): Map<string, boolean> {
  const paths = new Map<string, boolean>();
  for (const container of containers) {
    if (container === ROOT) paths.set(ROOT, true);
    let end = container.indexOf("/", 1);
    while (end !== -1) {
      const path = container.slice(0, end + 1);
      paths.set(path, paths.get(path) === true || path === container);
      end = container.indexOf("/", end + 1);
    }
  }
  return paths;
}

/**
 * Which rule lets the grantee exercise `permission` on a token in `containers`: the first rule, in precedence
 * order, that holds the permission and covers one of the containers. A rule that covers the token but lacks the
 * permission is passed over, not final. Undefined means no access at all.
 */
export function decide(
  grantee: Grantee,
  permission: TokenPermission,
  containers: readonly string[],
): Decision | undefined {
  return decideAmong(effectiveRules(grantee), permission, containers);
}

/**
 * `decide` with its trace (POST /access/explain): the same walk over the same rules, told about each rule it
 * passes over, so that an explanation cannot say other than what the API does.
 */
export function explain(
  grantee: Grantee,
  permission: TokenPermission,
  containers: readonly string[],
): Explanation {
  const passedOver: PassedOver[] = [];
  const decision = decideAmong(effectiveRules(grantee), permission, containers, (step) =>
    passedOver.push(step),
  );
  return { decision, passedOver };
}

/**
 * `decide` over rules already put in order by effectiveRules: a caller deciding for many tokens at once (a page
 * of search results) orders them once instead of once per token. `passOver`, when given, hears of each rule
 * tried before the deciding one and why it did not decide.
 */
export function decideAmong(
  rules: readonly RankedRule[],
  permission: TokenPermission,
  containers: readonly string[],
  passOver?: (step: PassedOver) => void,
): Decision | undefined {
  for (const ranked of rules) {
    const { rule } = ranked;
    const container = rule.container;
    if (container === undefined) {
      passOver?.({ ranked, reason: "conditions" });
    } else if (!rule.permissions.includes(permission)) {
      passOver?.({ ranked, reason: "permission" });
    } else if (containers.some((c) => containerCovers(container, c))) {
      return { transform: rule.transform, rule, origin: ranked.origin };
    } else {
      passOver?.({ ranked, reason: "container" });
    }
  }
  return undefined;
}

/** Writing a token requires the permission on every container it is put in, not just one of them. */
export function mayWriteInto(
  grantee: Grantee,
  permission: "token:create" | "token:update",
  containers: readonly string[],
): boolean {
  return containers.every((c) => decide(grantee, permission, [c]) !== undefined);
}

/** How much of a token's data a transform shows; no rule at all shows no more than `redact`. */
const SHOWN: Record<Transform, number> = { redact: 0, mask: 1, reveal: 2 };

/**
 * The permissions through which the grantee would see more of a token's data once it lies in `to` instead of
 * `from`: a move between containers must not be a way to read. `token:search` counts a token that becomes
 * searchable at all, even redacted, since every `data:` term is a guess at its value.
 */
export function widenedBy(
  grantee: Grantee,
  from: readonly string[],
  to: readonly string[],
): TokenPermission[] {
  const rules = effectiveRules(grantee);
  const shown = (permission: TokenPermission, containers: readonly string[]) => {
    const decision = decideAmong(rules, permission, containers);
    if (decision === undefined) return permission === "token:search" ? -1 : 0;
    return SHOWN[decision.transform];
  };
  return (["token:read", "token:search", "token:use"] as const).filter(
    (permission) => shown(permission, to) > shown(permission, from),
  );
}
