import { isDeepStrictEqual } from "node:util";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ROOT,
  containerCovers,
  containerPaths,
  conditionHolds,
  decide,
  effectiveRules,
  explain,
  mayWriteInto,
  reachOf,
  widenedBy,
  type Grantee,
} from "./decide.js";
import { TOKEN_PERMISSIONS, type Permission } from "./permissions.js";
import { TRANSFORMS, type AccessRule, type Condition } from "./rules.js";

const rule = (
  priority: number,
  container: string,
  transform: AccessRule["transform"],
  ...permissions: Permission[]
) => ({ priority, container, transform, permissions }) as AccessRule;

const when = (
  priority: number,
  conditions: Condition[],
  transform: AccessRule["transform"],
  ...permissions: Permission[]
): AccessRule => ({ priority, conditions, transform, permissions });
const cond = (attribute: Condition["attribute"], operator: Condition["operator"], value: string) =>
  ({ attribute, operator, value }) as Condition;

// Generators shared by the property tests: container rules, condition rules (as sessions hold), or both mixed.
const segment = fc.constantFrom("pci", "pcix", "pii", "high", "a");
const container = fc
  .array(segment, { maxLength: 3 })
  .map((parts) => `/${parts.map((p) => `${p}/`).join("")}`);
const tokenId = fc.constantFrom("t1", "t10", "u1", "t");
const condition = fc.oneof(
  fc.record({
    attribute: fc.constant("id" as const),
    operator: fc.constantFrom("equals" as const, "starts_with" as const),
    value: tokenId,
  }),
  fc.record({
    attribute: fc.constant("container" as const),
    operator: fc.constantFrom("equals" as const, "starts_with" as const),
    value: container,
  }),
);
const scope = fc.oneof(
  container.map((c) => ({ container: c })),
  fc.array(condition, { minLength: 1, maxLength: 3 }).map((conditions) => ({ conditions })),
);
const anyGrantee = fc.record({
  permissions: fc.subarray<Permission>([...TOKEN_PERMISSIONS]),
  rules: fc.uniqueArray(
    fc
      .record({
        priority: fc.integer({ min: 1, max: 50 }),
        scope,
        transform: fc.constantFrom(...TRANSFORMS),
        permissions: fc.subarray([...TOKEN_PERMISSIONS], { minLength: 1 }),
      })
      .map(({ scope: where, ...r }): AccessRule => ({ ...r, ...where })),
    { selector: (r) => r.priority, maxLength: 6 },
  ),
});
/** An Application holds container rules only (validateGrant); a session is bounded by one. */
const application = anyGrantee.map((g) => ({
  permissions: g.permissions,
  rules: g.rules.filter((r) => r.container !== undefined),
}));
const session = fc.record({
  permissions: anyGrantee.map((g) => g.permissions),
  rules: anyGrantee.map((g) => g.rules),
  ceiling: fc.option(application, { nil: undefined }),
});
const token = fc.record({
  id: fc.option(tokenId, { nil: undefined }),
  containers: fc.array(container, { minLength: 1, maxLength: 3 }),
});
type GeneratedToken = { id?: string | undefined; containers: string[] };
const subjectOf = (t: GeneratedToken) =>
  t.id === undefined ? { containers: t.containers } : { id: t.id, containers: t.containers };
/** A brute-force reading of spec §2.4: a container rule covers, or every condition of a condition rule holds. */
const matches = (r: AccessRule, t: GeneratedToken): boolean =>
  r.container !== undefined
    ? t.containers.some((c) => c.startsWith(r.container!))
    : (r.conditions ?? []).length > 0 &&
      (r.conditions ?? []).every((c) => {
        if (c.attribute === "id") {
          return (
            t.id !== undefined && (c.operator === "equals" ? t.id === c.value : t.id.startsWith(c.value))
          );
        }
        return c.operator === "equals"
          ? t.containers.includes(c.value)
          : t.containers.some((x) => x.startsWith(c.value));
      });

describe("containerCovers", () => {
  it.each([
    ["/pci/", "/pci/", true],
    ["/pci/", "/pci/high/", true],
    ["/pci/", "/pcix/", false],
    ["/pci/high/", "/pci/", false],
    ["/", "/anything/at/all/", true],
    ["/pci/high/", "/pci/higher/", false],
  ])("%s covers %s: %s", (rule, token, covers) => {
    expect(containerCovers(rule, token)).toBe(covers);
  });
});

describe("containerPaths", () => {
  it("lists every path above each container, the containers themselves marked, the root only as a container", () => {
    expect([...containerPaths(["/pci/high/", "/pci/"])]).toEqual([
      ["/pci/", true],
      ["/pci/high/", true],
    ]);
    expect([...containerPaths(["/a/b/c/"])]).toEqual([
      ["/a/", false],
      ["/a/b/", false],
      ["/a/b/c/", true],
    ]);
    expect([...containerPaths(["/"])]).toEqual([["/", true]]);
  });

  it("holds a rule's container exactly when the rule covers one of the containers (the search index relies on it)", () => {
    const path = fc
      .array(fc.constantFrom("pci", "pcix", "p", "high", "a.b", "x_y"), { maxLength: 4 })
      .map((segments) => `/${segments.map((s) => `${s}/`).join("")}`);
    fc.assert(
      fc.property(fc.array(path, { minLength: 1, maxLength: 3 }), path, (containers, ruleContainer) => {
        const paths = containerPaths(containers);
        const covered = containers.some((c) => containerCovers(ruleContainer, c));
        expect(ruleContainer === ROOT || paths.has(ruleContainer)).toBe(covered);
        for (const [p, exact] of paths) expect(exact).toBe(containers.includes(p));
      }),
      { numRuns: 2000 },
    );
  });
});

describe("decide", () => {
  const backend: Grantee = {
    permissions: [],
    rules: [
      rule(3, "/", "redact", "token:read"),
      rule(1, "/pci/high/", "reveal", "token:read"),
      rule(2, "/pci/", "mask", "token:read", "token:search"),
    ],
  };

  it.each<[Permission, string[], string | undefined]>([
    ["token:read", ["/pci/high/"], "reveal"],
    ["token:read", ["/pci/high/deeper/"], "reveal"],
    ["token:read", ["/pci/low/"], "mask"],
    ["token:read", ["/pcix/"], "redact"],
    ["token:search", ["/pci/high/"], "mask"],
    ["token:search", ["/pii/"], undefined],
    ["token:use", ["/pci/high/"], undefined],
    ["token:read", ["/pii/", "/pci/high/"], "reveal"],
  ])("%s on %j → %s", (permission, containers, transform) => {
    expect(decide(backend, permission as never, { containers })?.transform).toBe(transform);
  });

  it("passes over a covering rule that lacks the permission", () => {
    const grantee: Grantee = {
      permissions: [],
      rules: [rule(1, "/pci/", "reveal", "token:create"), rule(2, "/", "mask", "token:read")],
    };
    expect(decide(grantee, "token:read", { containers: ["/pci/"] })).toMatchObject({
      transform: "mask",
      rule: { priority: 2 },
    });
  });

  it("gives top-level permissions implicit rules over every container, after the explicit ones", () => {
    const grantee: Grantee = {
      permissions: ["token:read", "token:use", "application:read"],
      rules: [rule(5, "/pci/", "redact", "token:read")],
    };
    expect(
      effectiveRules(grantee).map(({ rule: r, origin }) => [r.container, r.transform, r.permissions, origin]),
    ).toEqual([
      ["/pci/", "redact", ["token:read"], { kind: "rule", index: 0 }],
      ["/", "mask", ["token:read"], { kind: "permission", permission: "token:read" }],
      ["/", "reveal", ["token:use"], { kind: "permission", permission: "token:use" }],
    ]);
    expect(decide(grantee, "token:read", { containers: ["/pci/x/"] })?.transform).toBe("redact");
    expect(decide(grantee, "token:read", { containers: ["/pii/"] })?.transform).toBe("mask");
    expect(decide(grantee, "token:use", { containers: ["/pii/"] })?.transform).toBe("reveal");
  });

  it("requires a write permission on every container", () => {
    const grantee: Grantee = { permissions: [], rules: [rule(1, "/pci/", "mask", "token:create")] };
    expect(mayWriteInto(grantee, "token:create", { containers: ["/pci/a/", "/pci/b/"] })).toBe(true);
    expect(mayWriteInto(grantee, "token:create", { containers: ["/pci/a/", "/pii/"] })).toBe(false);
    expect(mayWriteInto(grantee, "token:update", { containers: ["/pci/a/"] })).toBe(false);
  });

  const segment = fc.constantFrom("pci", "pcix", "pii", "high", "low", "a");
  const container = fc
    .array(segment, { maxLength: 3 })
    .map((parts) => `/${parts.map((p) => `${p}/`).join("")}`);
  const anyRule = fc.record({
    priority: fc.integer({ min: 1, max: 50 }),
    container,
    transform: fc.constantFrom(...TRANSFORMS),
    permissions: fc.subarray([...TOKEN_PERMISSIONS], { minLength: 1 }),
  });
  const grantee = fc.record({
    permissions: fc.subarray<Permission>([...TOKEN_PERMISSIONS]),
    rules: fc.uniqueArray(anyRule, { selector: (r) => r.priority, maxLength: 6 }),
  });

  it("agrees with a brute-force reading of the precedence rules", () => {
    fc.assert(
      fc.property(
        grantee,
        fc.constantFrom(...TOKEN_PERMISSIONS),
        fc.array(container, { minLength: 1, maxLength: 3 }),
        (g, p, cs) => {
          const candidates = [
            ...g.rules.map((r) => ({ r, rank: r.priority })),
            ...g.permissions.map((perm, i) => ({
              r: rule(0, "/", perm === "token:use" ? "reveal" : "mask", perm),
              rank: 1000 + i,
            })),
          ]
            .filter(({ r }) => r.permissions.includes(p) && cs.some((c) => c.startsWith(r.container!)))
            .sort((a, b) => a.rank - b.rank);
          expect(decide(g, p, { containers: cs })?.transform).toBe(candidates[0]?.r.transform);
        },
      ),
    );
  });

  it("never grants access through a rule for a sibling container with a shared prefix", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z]{1,6}$/), fc.stringMatching(/^[a-z]{1,6}$/), (a, suffix) => {
        const g: Grantee = { permissions: [], rules: [rule(1, `/${a}/`, "reveal", "token:read")] };
        expect(decide(g, "token:read", { containers: [`/${a}${suffix}/`] })).toBeUndefined();
      }),
    );
  });
});

describe("widenedBy", () => {
  const grantee: Grantee = {
    permissions: [],
    rules: [
      rule(1, "/a/open/", "reveal", "token:read", "token:update"),
      rule(2, "/a/use/", "mask", "token:read", "token:use"),
      rule(3, "/a/find/", "redact", "token:search"),
      rule(4, "/a/", "mask", "token:read", "token:update"),
      rule(5, "/b/", "redact", "token:read", "token:update"),
    ],
  };

  it.each<[string[], string[], string[]]>([
    [["/a/x/"], ["/a/y/"], []],
    [["/a/x/"], ["/a/open/"], ["token:read"]],
    [["/a/x/"], ["/a/use/"], ["token:use"]],
    [["/a/x/"], ["/a/find/"], ["token:search"]],
    [["/b/"], ["/a/x/"], ["token:read"]],
    [["/a/x/"], ["/b/"], []],
    [["/a/open/"], ["/a/x/"], []],
    // Several containers: the first covering rule decides, before and after.
    [["/b/", "/a/x/"], ["/a/x/"], []],
    [["/elsewhere/"], ["/b/"], []],
    [["/elsewhere/"], ["/a/x/"], ["token:read"]],
  ])("moving %j to %j shows more through %j", (from, to, widened) => {
    expect(widenedBy(grantee, { containers: from }, { containers: to })).toEqual(widened);
  });

  it("is never widened both ways, nor by staying put", () => {
    const containers = fc.array(fc.constantFrom("/a/x/", "/a/open/", "/a/use/", "/a/find/", "/b/", "/c/"), {
      minLength: 1,
      maxLength: 3,
    });
    fc.assert(
      fc.property(containers, containers, (from, to) => {
        expect(widenedBy(grantee, { containers: from }, { containers: from })).toEqual([]);
        const there = widenedBy(grantee, { containers: from }, { containers: to });
        const back = widenedBy(grantee, { containers: to }, { containers: from });
        expect(there.filter((permission) => back.includes(permission))).toEqual([]);
      }),
    );
  });
});

describe("explain", () => {
  const backend: Grantee = {
    permissions: ["token:search"],
    rules: [
      rule(30, "/", "redact", "token:read"),
      rule(10, "/pci/high/", "reveal", "token:read"),
      rule(20, "/pci/", "mask", "token:search", "token:use"),
    ],
  };

  it("names the deciding rule by its index as stored and each rule tried before it with the reason", () => {
    expect(explain(backend, "token:read", { containers: ["/pci/low/"] })).toEqual({
      decision: { transform: "redact", rule: backend.rules[0], origin: { kind: "rule", index: 0 } },
      passedOver: [
        { ranked: { rule: backend.rules[1], origin: { kind: "rule", index: 1 } }, reason: "container" },
        { ranked: { rule: backend.rules[2], origin: { kind: "rule", index: 2 } }, reason: "permission" },
      ],
    });
  });

  it("falls through to a top-level permission's implicit rule, and tries every rule when none decides", () => {
    const search = explain(backend, "token:search", { containers: ["/pii/"] });
    expect(search.decision).toMatchObject({
      transform: "mask",
      origin: { kind: "permission", permission: "token:search" },
    });
    expect(search.passedOver.map((p) => p.reason)).toEqual(["permission", "container", "permission"]);

    const use = explain(backend, "token:use", { containers: ["/pii/"] });
    expect(use.decision).toBeUndefined();
    expect(use.passedOver.map((p) => [p.ranked.origin, p.reason])).toEqual([
      [{ kind: "rule", index: 1 }, "permission"],
      [{ kind: "rule", index: 2 }, "container"],
      [{ kind: "rule", index: 0 }, "permission"],
      [{ kind: "permission", permission: "token:search" }, "permission"],
    ]);
  });

  it("passes over a condition rule whose conditions do not hold, and decides by one whose conditions do", () => {
    const grantee: Grantee = {
      permissions: [],
      rules: [
        when(1, [cond("container", "starts_with", "/pci/")], "reveal", "token:read"),
        rule(2, "/", "mask", "token:read"),
      ],
    };
    const elsewhere = explain(grantee, "token:read", { id: "a", containers: ["/pii/"] });
    expect(elsewhere.passedOver.map((p) => p.reason)).toEqual(["conditions"]);
    expect(elsewhere.decision?.origin).toEqual({ kind: "rule", index: 1 });
    const inside = explain(grantee, "token:read", { id: "a", containers: ["/pci/"] });
    expect(inside.decision?.origin).toEqual({ kind: "rule", index: 0 });
  });

  it("explains a session's decision with the walk over its authorizing Application's rules", () => {
    const ceiling: Grantee = { permissions: [], rules: [rule(1, "/pci/", "mask", "token:read")] };
    const session: Grantee = {
      permissions: [],
      rules: [when(1, [cond("id", "equals", "t1")], "reveal", "token:read")],
      ceiling,
    };
    const result = explain(session, "token:read", { id: "t1", containers: ["/pci/"] });
    expect(result.decision).toMatchObject({ transform: "mask", ceiling: { transform: "mask" } });
    expect(result.ceiling?.decision?.rule).toBe(ceiling.rules[0]);
    expect(explain(session, "token:read", { id: "t2", containers: ["/pci/"] })).toEqual({
      decision: undefined,
      passedOver: [
        { ranked: { rule: session.rules[0], origin: { kind: "rule", index: 0 } }, reason: "conditions" },
      ],
    });
    // The session's rule matched, the ceiling reaches nothing there: denied, and the ceiling's walk says why.
    const outside = explain(session, "token:read", { id: "t1", containers: ["/pii/"] });
    expect(outside.decision).toBeUndefined();
    expect(outside.passedOver).toEqual([]);
    expect(outside.ceiling?.passedOver.map((p) => p.reason)).toEqual(["container"]);
  });

  it("agrees with decide over container and condition rules, sessions included, and its trace is every rule before the decider in precedence order, each for a true reason", () => {
    fc.assert(
      fc.property(session, fc.constantFrom(...TOKEN_PERMISSIONS), token, (g: Grantee, p, t) => {
        const subject = subjectOf(t);
        const { decision, passedOver, ceiling } = explain(g, p, subject);
        expect(decision).toEqual(decide(g, p, subject));
        const ordered = effectiveRules(g);
        // With a ceiling explained, the session's own walk decided, at the first rule not passed over.
        const decidedAt =
          ceiling !== undefined
            ? passedOver.length
            : decision === undefined
              ? ordered.length
              : ordered.findIndex((r) => isDeepStrictEqual(r.origin, decision.origin));
        expect(passedOver.map((step) => step.ranked)).toEqual(ordered.slice(0, decidedAt));
        for (const { ranked, reason } of passedOver) {
          const holds = ranked.rule.permissions.includes(p);
          const where = ranked.rule.container !== undefined ? "container" : "conditions";
          expect(reason).toBe(holds ? where : "permission");
          if (reason !== "permission") expect(matches(ranked.rule, t)).toBe(false);
        }
        if (ceiling !== undefined) {
          expect(g.ceiling).toBeDefined();
          expect(ceiling.decision).toEqual(decide(g.ceiling!, p, subject));
          const own = ordered[decidedAt]!;
          expect(own.rule.permissions).toContain(p);
          expect(matches(own.rule, t)).toBe(true);
        }
        if (decision !== undefined) {
          const origin = decision.origin;
          const stated = origin.kind === "rule" ? g.rules[origin.index] : undefined;
          if (origin.kind === "rule") expect(decision.rule).toBe(stated);
          else expect(g.permissions).toContain(origin.permission);
        }
      }),
      { numRuns: 1000 },
    );
  });
});

describe("conditions and sessions", () => {
  it.each<[Condition, { id?: string; containers: string[] }, boolean]>([
    [cond("id", "equals", "tok_1"), { id: "tok_1", containers: ["/"] }, true],
    [cond("id", "equals", "tok_1"), { id: "tok_10", containers: ["/"] }, false],
    [cond("id", "starts_with", "tok_"), { id: "tok_10", containers: ["/"] }, true],
    [cond("id", "starts_with", "tok_"), { id: "TOK_10", containers: ["/"] }, false],
    [cond("id", "starts_with", "tok_"), { containers: ["/"] }, false],
    [cond("id", "equals", ""), { containers: ["/"] }, false],
    [cond("container", "equals", "/pci/"), { id: "a", containers: ["/pci/"] }, true],
    [cond("container", "equals", "/pci/"), { id: "a", containers: ["/pci/high/"] }, false],
    [cond("container", "equals", "/PCI/"), { id: "a", containers: ["/pii/", "/pci/"] }, true],
    [cond("container", "starts_with", "/pci/"), { id: "a", containers: ["/pci/high/"] }, true],
    [cond("container", "starts_with", "/pci/"), { id: "a", containers: ["/pcix/"] }, false],
    [cond("container", "starts_with", "/Pci/"), { id: "a", containers: ["/pci/"] }, true],
    [cond("container", "starts_with", "/"), { id: "a", containers: ["/x/"] }, true],
  ])("condition %j on %j holds: %s", (condition, token, holds) => {
    expect(conditionHolds(condition, token)).toBe(holds);
    const grantee: Grantee = { permissions: [], rules: [when(1, [condition], "reveal", "token:read")] };
    expect(decide(grantee, "token:read", token)?.transform).toBe(holds ? "reveal" : undefined);
  });

  it("needs every condition of a rule, and tries condition rules in priority order with the others", () => {
    const grantee: Grantee = {
      permissions: ["token:read"],
      rules: [
        when(
          2,
          [cond("container", "starts_with", "/pci/"), cond("id", "starts_with", "vip_")],
          "reveal",
          "token:read",
        ),
        when(1, [cond("id", "equals", "vip_1")], "redact", "token:read"),
        when(3, [cond("container", "equals", "/pci/")], "mask", "token:use"),
      ],
    };
    expect(decide(grantee, "token:read", { id: "vip_1", containers: ["/pci/"] })?.transform).toBe("redact");
    expect(decide(grantee, "token:read", { id: "vip_2", containers: ["/pci/a/"] })?.transform).toBe("reveal");
    // The conditions hold only in part: on to the implicit rule of the top-level permission.
    expect(decide(grantee, "token:read", { id: "std_2", containers: ["/pci/a/"] })).toMatchObject({
      transform: "mask",
      origin: { kind: "permission", permission: "token:read" },
    });
    expect(decide(grantee, "token:use", { id: "x", containers: ["/pci/"] })?.transform).toBe("mask");
    expect(decide(grantee, "token:use", { id: "x", containers: ["/pci/a/"] })).toBeUndefined();
  });

  it("keeps a session within its authorizing Application: no decision without one of the ceiling, never more shown", () => {
    const ceiling: Grantee = {
      permissions: [],
      rules: [
        rule(1, "/pci/high/", "mask", "token:read"),
        rule(2, "/pci/", "reveal", "token:read", "token:search"),
      ],
    };
    const session: Grantee = {
      permissions: ["token:search"],
      rules: [when(1, [cond("container", "starts_with", "/")], "reveal", "token:read")],
      ceiling,
    };
    expect(decide(session, "token:read", { id: "a", containers: ["/pci/low/"] })).toMatchObject({
      transform: "reveal",
      ceiling: { transform: "reveal", rule: { priority: 2 } },
    });
    expect(decide(session, "token:read", { id: "a", containers: ["/pci/high/"] })?.transform).toBe("mask");
    expect(decide(session, "token:read", { id: "a", containers: ["/pii/"] })).toBeUndefined();
    // The session's own implicit token:search rule masks, where the ceiling would reveal: mask.
    expect(decide(session, "token:search", { id: "a", containers: ["/pci/"] })?.transform).toBe("mask");
    expect(decide(session, "token:use", { id: "a", containers: ["/pci/"] })).toBeUndefined();
    expect(mayWriteInto(session, "token:create", { containers: ["/pci/"] })).toBe(false);
  });

  it("states a grantee's reach: container paths, and for a session its condition rules beside its ceiling's paths", () => {
    const ceiling: Grantee = { permissions: [], rules: [rule(1, "/pci/", "reveal", "token:read")] };
    expect(reachOf(ceiling, "token:read")).toEqual({ paths: ["/pci/"] });
    const conditions = [cond("id", "starts_with", "a"), cond("container", "equals", "/pci/x/")];
    const session: Grantee = {
      permissions: [],
      rules: [
        when(1, conditions, "reveal", "token:read"),
        when(2, [cond("id", "equals", "b")], "mask", "token:use"),
      ],
      ceiling,
    };
    expect(reachOf(session, "token:read")).toEqual({ paths: ["/pci/"], conditions: [conditions] });
    expect(reachOf(session, "token:search")).toEqual({ paths: [], conditions: [] });
    expect(reachOf({ ...session, permissions: ["token:read"] }, "token:read")).toEqual({ paths: ["/pci/"] });
  });

  it("agrees with a brute-force reading: a session decides when its first matching rule holding the permission does and its ceiling decides too, showing the lesser", () => {
    const shown = { redact: 0, mask: 1, reveal: 2 };
    fc.assert(
      fc.property(session, fc.constantFrom(...TOKEN_PERMISSIONS), token, (g: Grantee, p, t) => {
        const first = (x: Grantee) =>
          [
            ...x.rules.map((r) => ({ r, rank: r.priority })),
            ...x.permissions.map((perm, i) => ({
              r: rule(0, "/", perm === "token:use" ? "reveal" : "mask", perm),
              rank: 1000 + i,
            })),
          ]
            .filter(({ r }) => r.permissions.includes(p) && matches(r, t))
            .sort((a, b) => a.rank - b.rank)[0]?.r;
        const own = first(g);
        const cap = g.ceiling === undefined ? own : first(g.ceiling);
        const expected =
          own === undefined || cap === undefined
            ? undefined
            : shown[cap.transform] < shown[own.transform]
              ? cap.transform
              : own.transform;
        // Reach (what search and list put in SQL) holds exactly the tokens decide finds a rule for.
        const reach = reachOf(g, p);
        const reached =
          reach.paths.some((path) => t.containers.some((c) => c.startsWith(path))) &&
          (reach.conditions === undefined ||
            reach.conditions.some((all) => all.every((c) => conditionHolds(c, subjectOf(t)))));
        expect(decide(g, p, subjectOf(t))?.transform).toBe(expected);
        expect(reached).toBe(expected !== undefined);
      }),
      { numRuns: 1000 },
    );
  });
});
