import { isTokenPermission, type Permission, type TokenPermission } from "./permissions.js";
import { normalizeContainer, type AccessRule, type Condition, type Transform } from "./rules.js";

export interface Grantee {
  readonly permissions: readonly Permission[];
  readonly rules: readonly AccessRule[];
  /**
   * A session's authorizing Application as it is now: the session never gets more than it (no escalation). A
   * decision needs a rule of both, and shows no more than either shows.
   */
  readonly ceiling?: Grantee;
}

/**
 * What rules are matched against: a token's containers, and its id for `id` conditions. A token not yet
 * created has no id unless its caller chose one, and then no `id` condition holds for it.
 */
export interface TokenSubject {
  readonly id?: string;
  readonly containers: readonly string[];
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
  /** For a session: the authorizing Application's decision, which bounds `transform`. */
  readonly ceiling?: Decision;
}

/**
 * Why a rule tried before the deciding one did not decide: it lacks the permission, its container covers none of
 * the token's containers, or (a session's rule) one of its conditions does not hold for the token.
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
  /** For a session whose own rules decided: the same walk over its authorizing Application's rules. */
  readonly ceiling?: Explanation;
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

/**
 * The containers of the grantee's container rules (explicit and implicit) that hold `permission`: what an
 * Application may reach. A session's reach is `reachOf`.
 */
export function ruleContainers(grantee: Grantee, permission: TokenPermission): string[] {
  return effectiveRules(grantee)
    .map(({ rule }) => rule)
    .filter((r) => r.container !== undefined && r.permissions.includes(permission))
    .map((r) => r.container as string);
}

/**
 * Which tokens a grantee may reach with `permission`, in the terms a query is built from: those under one of
 * `paths` and, when `conditions` is given, for which every condition of at least one of its members holds (an
 * empty list: no token). Exactly the tokens `decide` finds a rule for.
 */
export interface Reach {
  readonly paths: readonly string[];
  readonly conditions?: readonly (readonly Condition[])[];
}

export function reachOf(grantee: Grantee, permission: TokenPermission): Reach {
  const alternatives: (readonly Condition[])[] = [];
  let conditional = false;
  for (const { rule } of effectiveRules(grantee)) {
    if (!rule.permissions.includes(permission)) continue;
    if (rule.container !== undefined) {
      alternatives.push([{ attribute: "container", operator: "starts_with", value: rule.container }]);
    } else if (rule.conditions !== undefined && rule.conditions.length > 0) {
      alternatives.push(rule.conditions);
      conditional = true;
    }
  }
  // A ceiling is an Application, whose rules are container rules (validateGrant): its reach is its paths.
  const paths = grantee.ceiling === undefined ? [ROOT] : ruleContainers(grantee.ceiling, permission);
  if (grantee.ceiling === undefined && !conditional) return { paths: ruleContainers(grantee, permission) };
  // A rule over the root reaches every token: the paths alone then bound it.
  const everywhere = alternatives.some(
    (all) =>
      all.length === 1 &&
      all[0]?.attribute === "container" &&
      all[0].operator === "starts_with" &&
      normalizeContainer(all[0].value) === ROOT,
  );
  return everywhere ? { paths } : { paths, conditions: alternatives };
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
 * Whether a session rule's condition holds for a token (spec §2.4): `id` compares with the token's id, `container`
 * with each of its containers, normalised like container rules, so `starts_with` covers a container and its
 * sub-containers on segment boundaries exactly as a rule's `container` does, and `equals` only that container.
 */
export function conditionHolds(condition: Condition, token: TokenSubject): boolean {
  if (condition.attribute === "id") {
    if (token.id === undefined) return false;
    return condition.operator === "equals"
      ? token.id === condition.value
      : token.id.startsWith(condition.value);
  }
  const value = normalizeContainer(condition.value);
  return condition.operator === "equals"
    ? token.containers.includes(value)
    : token.containers.some((c) => containerCovers(value, c));
}

/**
 * Which rule lets the grantee exercise `permission` on a token: the first rule, in precedence order, that holds
 * the permission and matches the token (its container covers one of the token's containers, or every one of
 * its conditions holds). A rule that matches but lacks the permission is passed over, not final. For a session,
 * the authorizing Application must decide too, and the transform is the narrower of the two. Undefined means no
 * access at all.
 */
export function decide(
  grantee: Grantee,
  permission: TokenPermission,
  token: TokenSubject,
): Decision | undefined {
  return decider(grantee)(permission, token);
}

/**
 * `decide` with the rules put in order once: a caller deciding for many tokens at once (a page of search
 * results) orders them once instead of once per token.
 */
export function decider(
  grantee: Grantee,
): (permission: TokenPermission, token: TokenSubject) => Decision | undefined {
  const rules = effectiveRules(grantee);
  const ceiling = grantee.ceiling === undefined ? undefined : decider(grantee.ceiling);
  return (permission, token) => {
    const own = decideAmong(rules, permission, token);
    return own === undefined || ceiling === undefined ? own : bounded(own, ceiling(permission, token));
  };
}

/** How much of a token's data a transform shows; no rule at all shows no more than `redact`. */
const SHOWN: Record<Transform, number> = { redact: 0, mask: 1, reveal: 2 };

/** A session's decision within its authorizing Application's: none without it, and never showing more. */
function bounded(own: Decision, ceiling: Decision | undefined): Decision | undefined {
  if (ceiling === undefined) return undefined;
  const transform = SHOWN[ceiling.transform] < SHOWN[own.transform] ? ceiling.transform : own.transform;
  return { ...own, transform, ceiling };
}

/**
 * `decide` with its trace (POST /access/explain): the same walk over the same rules, told about each rule it
 * passes over, so that an explanation cannot say other than what the API does.
 */
export function explain(grantee: Grantee, permission: TokenPermission, token: TokenSubject): Explanation {
  const passedOver: PassedOver[] = [];
  const own = decideAmong(effectiveRules(grantee), permission, token, (step) => passedOver.push(step));
  if (own === undefined || grantee.ceiling === undefined) return { decision: own, passedOver };
  const ceiling = explain(grantee.ceiling, permission, token);
  return { decision: bounded(own, ceiling.decision), passedOver, ceiling };
}

/**
 * The one walk: over rules already put in order by effectiveRules, the first that holds the permission and
 * matches the token. `passOver`, when given, hears of each rule tried before the deciding one and why it did
 * not decide.
 */
export function decideAmong(
  rules: readonly RankedRule[],
  permission: TokenPermission,
  token: TokenSubject,
  passOver?: (step: PassedOver) => void,
): Decision | undefined {
  for (const ranked of rules) {
    const { rule } = ranked;
    const mismatch = !rule.permissions.includes(permission) ? "permission" : mismatchOf(rule, token);
    if (mismatch === undefined) return { transform: rule.transform, rule, origin: ranked.origin };
    passOver?.({ ranked, reason: mismatch });
  }
  return undefined;
}

function mismatchOf(rule: AccessRule, token: TokenSubject): Mismatch | undefined {
  const container = rule.container;
  if (container !== undefined) {
    return token.containers.some((c) => containerCovers(container, c)) ? undefined : "container";
  }
  // A rule with neither container nor conditions never passes validation; should one exist, it matches nothing.
  const conditions = rule.conditions ?? [];
  return conditions.length > 0 && conditions.every((c) => conditionHolds(c, token))
    ? undefined
    : "conditions";
}

/** Writing a token requires the permission on every container it is put in, not just one of them. */
export function mayWriteInto(
  grantee: Grantee,
  permission: "token:create" | "token:update",
  token: TokenSubject,
): boolean {
  const decideFor = decider(grantee);
  return token.containers.every(
    (c) =>
      decideFor(permission, { ...(token.id !== undefined && { id: token.id }), containers: [c] }) !==
      undefined,
  );
}

/**
 * The permissions through which the grantee would see more of a token's data once it lies in `to` instead of
 * `from`: a move between containers must not be a way to read. `token:search` counts a token that becomes
 * searchable at all, even redacted, since every `data:` term is a guess at its value.
 */
export function widenedBy(grantee: Grantee, from: TokenSubject, to: TokenSubject): TokenPermission[] {
  const decideFor = decider(grantee);
  const shown = (permission: TokenPermission, token: TokenSubject) => {
    const decision = decideFor(permission, token);
    if (decision === undefined) return permission === "token:search" ? -1 : 0;
    return SHOWN[decision.transform];
  };
  return (["token:read", "token:search", "token:use"] as const).filter(
    (permission) => shown(permission, to) > shown(permission, from),
  );
}
